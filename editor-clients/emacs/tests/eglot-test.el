;;; eglot-test.el --- kernelscope with eglot in `emacs --batch' -*- lexical-binding: t; -*-
;; eglot shows no code lenses: hover on a kernel name carries its experiment table. Then
;; "an agent" rewrites kernel.py on disk (the kernel moves down), the buffer is reverted as
;; M-x revert-buffer does: still managed, hover found at the kernel's new line, an edit + save
;; re-benchmarks (a background probe); the daemon's commands run from `kernelscope-command', and
;; a job the user starts says how it ended.
;; Driven by tests/editors/test_editor_emacs.py; writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))
(require 'eglot)

(defvar ks-finished nil "kernelscope/jobFinished notifications (plists), newest first.")
(advice-add 'kernelscope--job-finished :before (lambda (params) (push params ks-finished)))

(defun ks-hover-kernel ()
  "Hover on add_kernel's name: (LINE . MARKDOWN), LINE 1-based."
  (goto-char (point-min))
  (search-forward "def add_kernel")
  (backward-char 3)
  (let* ((hover (jsonrpc-request (eglot-current-server) :textDocument/hover
                                 (eglot--TextDocumentPositionParams)))
         (contents (plist-get hover :contents)))
    (cons (line-number-at-pos) (plist-get contents :value))))

(defun ks-messages ()
  (with-current-buffer (messages-buffer) (buffer-string)))

(condition-case err
    (progn
      (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
      (python-mode)
      (apply #'eglot (eglot--guess-contact))
      (ks-wait 30 #'eglot-current-server)
      (push (cons 'connected (and (eglot-current-server) t)) ks-result)
      (push (cons 'hover (cdr (ks-hover-kernel))) ks-result)

      ;; an agent rewrites kernel.py: three lines above the kernel
      (let ((file buffer-file-name))
        (with-temp-file (concat file ".tmp")
          (insert "# rewritten by an agent, line 1\n# line 2\n# line 3\n")
          (insert-file-contents file))
        (rename-file (concat file ".tmp") file t))
      (revert-buffer t t)  ; as M-x revert-buffer: the major mode runs again
      (push (cons 'managed_after_revert (ks-wait 30 (lambda () (and eglot--managed-mode (eglot-current-server) t))))
            ks-result)
      (let ((hover (ks-hover-kernel)))
        (push (cons 'hover_line_after_revert (car hover)) ks-result)
        (push (cons 'hover_after_revert (cdr hover)) ks-result))

      ;; an edit that breaks the kernel, saved: a background probe runs the saved text
      (let ((before (length ks-finished)))
        (goto-char (point-min))
        (search-forward "x + y, mask=mask")
        (replace-match "x - y, mask=mask" t t)
        (save-buffer)
        (ks-wait 90 (lambda ()
                      (seq-find (lambda (p) (and (eq (plist-get p :background) t)
                                                 (not (eq (plist-get p :cancelled) t))))
                                (butlast ks-finished before))))
        (let ((probe (seq-find (lambda (p) (eq (plist-get p :background) t)) (butlast ks-finished before))))
          (push (cons 'probed (and probe t)) ks-result)
          (push (cons 'probe_passed (and probe (eq (plist-get (plist-get probe :result) :passed) t)))
                ks-result)))

      ;; eglot has no lenses: the daemon's commands run from M-x kernelscope-command, which
      ;; offers the daemon's names; C-u asks for a JSON object (a dry-run mask-half here)
      (let (offered)
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt collection &rest _) (setq offered collection) "kernelscope.maskHalf"))
                  ((symbol-function 'read-string) (lambda (&rest _) "{\"dryRun\": true}")))
          (let* ((current-prefix-arg '(4))
                 (answer (call-interactively #'kernelscope-command)))
            (push (cons 'command_offered (vconcat offered)) ks-result)
            (push (cons 'mask_dry_run (list (cons 'dry_run (plist-get answer :dry_run))
                                            (cons 'best (plist-get answer :best_version))))
                  ks-result))))
      (with-current-buffer (kernelscope-command "kernelscope.showHistory" '(:kernel "add_kernel"))
        (push (cons 'history_buffer (list (cons 'name (buffer-name)) (cons 'read_only buffer-read-only)
                                          (cons 'text (buffer-string))))
              ks-result))
      (push (cons 'refused (condition-case err (progn (kernelscope-command "kernelscope.unmask" "{}") nil)
                             (user-error (cadr err))))
            ks-result)

      ;; a job the user starts says how it ended
      (kernelscope-command "kernelscope.benchmark")
      (push (cons 'job_message
                  (and (ks-wait 120 (lambda () (string-match-p "^kernelscope benchmark: " (ks-messages))))
                       (car (seq-filter (lambda (l) (string-prefix-p "kernelscope benchmark: " l))
                                        (split-string (ks-messages) "\n")))))
            ks-result)

      ;; mask-half asks first: eglot's window/showMessageRequest handler (completing-read, here
      ;; the person) shows the daemon's question; Cancel writes nothing, Mask masks
      (dolist (choice '("Cancel" "Mask"))
        (let (question)
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (prompt &rest _) (setq question prompt) choice)))
            (let ((answer (kernelscope-command "kernelscope.maskHalf")))
              (push (cons (intern (concat "mask_" (downcase choice)))
                          (list (cons 'question question) (cons 'declined (plist-get answer :declined))
                                (cons 'masked (plist-get answer :masked))))
                    ks-result)))))
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
