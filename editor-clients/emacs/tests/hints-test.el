;;; hints-test.el --- history hints and compare, lsp-mode or eglot ($KS_CLIENT) -*- lexical-binding: t; -*-
;; Driven by tests/editors/test_editor_emacs.py on a workspace with a git history (kernel.py is v4's):
;; hover on the launch line ($KS_LAUNCH_LINE, 0-based) says which version introduced it; the
;; inlay hints as the buffer shows them (overlays, whoever drew them) carry "tried" at the
;; launch line; the buffer replaced by v0's kernel ($KS_V0, a file) and saved gets an
;; "identical to v0" diagnostic and no benchmark; after `revert-buffer' the hints come back;
;; `kernelscope-compare' shows v0..v4 (called from Lisp, and as M-x runs it).
;; Writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))

(defvar ks-client (getenv "KS_CLIENT") "\"lsp-mode\" or \"eglot\".")
(defvar ks-launch-line (string-to-number (getenv "KS_LAUNCH_LINE")))
(defvar ks-finished nil "kernelscope/jobFinished notifications, newest first.")
(advice-add 'kernelscope--job-finished :before (lambda (params) (push params ks-finished)))

(defvar ks-inlay-refreshes 0 "workspace/inlayHint/refresh requests eglot got.")

(if (equal ks-client "eglot")
    (progn
      (require 'eglot)
      (advice-add 'eglot-handle-request :before
                  (lambda (_server method &rest _)
                    (when (eq method 'workspace/inlayHint/refresh) (cl-incf ks-inlay-refreshes)))))
  (ks-lsp-mode)
  (setq lsp-response-timeout 120))  ; the first answers build the history, on a busy machine

(defun ks-served ()
  (if (equal ks-client "eglot")
      (and eglot--managed-mode (eglot-current-server) t)
    (and (bound-and-true-p lsp-mode)
         (seq-find (lambda (w) (eq (lsp--workspace-status w) 'initialized)) (lsp-workspaces))
         t)))

(defun ks-hover (line column)
  "The hover text at LINE (0-based), COLUMN."
  (goto-char (point-min))
  (forward-line line)
  (forward-char column)
  (let ((hover (if (equal ks-client "eglot")
                   (jsonrpc-request (eglot-current-server) :textDocument/hover
                                    (eglot--TextDocumentPositionParams) :timeout 120)
                 (lsp-request "textDocument/hover" (lsp--text-document-position-params)))))
    (and hover (kernelscope--get (kernelscope--get hover "contents") "value"))))

(defun ks-hints ()
  "The inlay hints the buffer displays, whoever drew them: ((LINE . TEXT) ...), LINE 0-based."
  (delq nil (mapcar (lambda (ov)
                      (let ((text (or (overlay-get ov 'after-string) (overlay-get ov 'before-string))))
                        (when (and text (string-match-p "[^ ]" text))
                          (cons (1- (line-number-at-pos (overlay-start ov)))
                                (string-trim (substring-no-properties text))))))
                    (overlays-in (point-min) (point-max)))))

(defun ks-tried-at (line)
  (cdr (seq-find (lambda (hint) (and (= (car hint) line) (string-prefix-p "tried" (cdr hint))))
                 (ks-hints))))

(defun ks-json-hints ()
  (vconcat (mapcar (lambda (hint) (list (cons 'line (car hint)) (cons 'text (cdr hint)))) (ks-hints))))

(defun ks-diagnostics ()
  "The messages of this buffer's diagnostics, as the client keeps them."
  (if (equal ks-client "eglot")
      (mapcar #'flymake-diagnostic-text (flymake-diagnostics))
    (let (messages)
      (maphash (lambda (_file diagnostics)
                 (dolist (diagnostic diagnostics)
                   (push (lsp:diagnostic-message diagnostic) messages)))
               (lsp-diagnostics t))
      messages)))

(defun ks-identical ()
  "The diagnostic message that starts \"identical to v0\" (eglot shows it as \"SOURCE [CODE]: MESSAGE\")."
  (seq-find (lambda (message)
              (string-prefix-p "identical to v0" (replace-regexp-in-string "\\`kernelscope \\[[^]]*\\]: " "" message)))
            (ks-diagnostics)))

(defun ks-user-error (thunk)
  "The message of the `user-error' THUNK signals (nil if none)."
  (condition-case err (progn (funcall thunk) nil)
    (user-error (cadr err))))

(condition-case err
    (progn
      (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
      (python-mode)
      (if (equal ks-client "eglot")
          (apply #'eglot (eglot--guess-contact))
        (lsp))
      (push (cons 'served (ks-wait 60 #'ks-served)) ks-result)
      (push (cons 'client_inlay_hints
                  (and (fboundp (if (equal ks-client "eglot") 'eglot-inlay-hints-mode 'lsp-inlay-hints-mode))
                       t))
            ks-result)
      (push (cons 'kernelscope_hints_mode (bound-and-true-p kernelscope-hints-mode)) ks-result)

      ;; blame in hover on the launch line
      (push (cons 'hover (ks-hover ks-launch-line 8)) ks-result)

      ;; the values already tried, as the buffer displays them
      (push (cons 'tried (and (ks-wait 60 (lambda () (ks-tried-at ks-launch-line)))
                              (ks-tried-at ks-launch-line)))
            ks-result)
      (push (cons 'hints (ks-json-hints)) ks-result)
      (push (cons 'hint_overlay_category
                  (let ((ov (seq-find (lambda (ov) (overlay-get ov 'after-string))
                                      (overlays-in (point-min) (point-max)))))
                    (and ov (format "%s" (overlay-get ov 'category)))))
            ks-result)

      ;; v0's code saved again: said at once, not benchmarked again
      (let ((before (length ks-finished)))
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert-file-contents (getenv "KS_V0")))
        (save-buffer)
        (push (cons 'identical (and (ks-wait 60 #'ks-identical) (ks-identical))) ks-result)
        (push (cons 'diagnostics (vconcat (ks-diagnostics))) ks-result)
        ;; the hints follow the saved text (the erase left the old overlays at the top)
        (push (cons 'tried_after_save (and (ks-wait 60 (lambda () (ks-tried-at ks-launch-line)))
                                           (ks-tried-at ks-launch-line)))
              ks-result)
        ;; far past the 100 ms debounce and an interpreter-mode probe's few seconds
        (ks-wait 15 (lambda () (> (length ks-finished) before)))
        (push (cons 'jobs_finished_after_save (- (length ks-finished) before)) ks-result)
        (push (cons 'inlay_refreshes ks-inlay-refreshes) ks-result))

      ;; M-x revert-buffer runs the major mode again (lsp-mode reconnects, eglot re-manages):
      ;; new hints are drawn
      (let ((old (overlays-in (point-min) (point-max))))
        (revert-buffer t t)
        (push (cons 'served_after_revert (ks-wait 60 #'ks-served)) ks-result)
        (push (cons 'tried_after_revert
                    (ks-wait 60 (lambda ()
                                  (seq-find (lambda (ov)
                                              (and (not (memq ov old))
                                                   (= (1- (line-number-at-pos (overlay-start ov))) ks-launch-line)
                                                   (string-match-p "tried" (or (overlay-get ov 'after-string)
                                                                               (overlay-get ov 'before-string) ""))))
                                            (overlays-in (point-min) (point-max))))))
              ks-result))

      ;; compare two versions: M-x kernelscope-compare offers the recorded versions, oldest
      ;; and newest by default
      (let (offered)
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt collection &rest rest) (setq offered collection) (nth 4 rest))))
          (push (cons 'interactive_compare
                      (save-window-excursion  ; it pops to the comparison
                        (save-current-buffer (buffer-name (call-interactively #'kernelscope-compare)))))
                ks-result))
        (push (cons 'offered_versions (vconcat offered)) ks-result))
      (let ((buffer (kernelscope-compare "v0" "v4")))
        (with-current-buffer buffer
          (push (cons 'compare_buffer (buffer-name)) ks-result)
          (push (cons 'compare_read_only buffer-read-only) ks-result)
          (push (cons 'compare_mode (symbol-name major-mode)) ks-result)
          (push (cons 'compare_text (buffer-substring-no-properties (point-min) (point-max))) ks-result)))
      (push (cons 'compare_unknown (ks-user-error (lambda () (kernelscope-compare "v0" "v9")))) ks-result)
      (push (cons 'compare_outside
                  (ks-user-error (lambda () (with-temp-buffer (kernelscope-compare "v0" "v4")))))
            ks-result)
      (push (cons 'compare_unserved
                  (ks-user-error (lambda ()
                                   ;; a markdown file beside kernel.py, not the README (which is served)
                                   (with-current-buffer (find-file-noselect
                                                         (expand-file-name "NOTES.md" (getenv "KS_WS")))
                                     (kernelscope-compare "v0" "v4")))))
            ks-result)
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
