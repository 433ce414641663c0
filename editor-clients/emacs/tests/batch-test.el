;;; batch-test.el --- kernelscope with lsp-mode in `emacs --batch' -*- lexical-binding: t; -*-
;; Driven by tests/editors/test_editor_emacs.py: opens kernel.py of $KS_WS, starts lsp-mode with the
;; kernelscope client only, asks for code lenses, runs a command and sees the lens overlays;
;; then twice lets "an agent" rewrite kernel.py on disk so that the kernel moves down, reloads
;; the buffer (`revert-buffer' as M-x runs it, then `auto-revert-mode'), and checks that the
;; buffer is still served, the lens overlay moved with the kernel, and an edit + save
;; re-benchmarks (a background probe finishes and the `last probe:' lens shows its verdict).
;; Writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))
(ks-lsp-mode)
(require 'autorevert)

(setq auto-revert-use-notify nil
      auto-revert-interval 0.5
      auto-revert-verbose nil)

(defvar ks-finished nil "kernelscope/jobFinished notifications, newest first.")
(advice-add 'kernelscope--lsp-job-finished :before
            (lambda (_workspace params) (push params ks-finished)))

(defun ks-overlays ()
  "The lens overlays drawn now: (line . text), line 0-based."
  (delq nil (mapcar (lambda (ov)
                      (when (and (overlay-buffer ov) (overlay-get ov 'lsp-lens-position))
                        (cons (1- (line-number-at-pos (overlay-get ov 'lsp-lens-position)))
                              (substring-no-properties (or (overlay-get ov 'lsp--lens-contents) "")))))
                    (bound-and-true-p lsp-lens--overlays))))

(defun ks-lens (regexp &optional line)
  (seq-find (lambda (item) (and (string-match-p regexp (cdr item)) (or (null line) (= line (car item)))))
            (ks-overlays)))

(defun ks-served ()
  (and (bound-and-true-p lsp-mode)
       (seq-find (lambda (w) (eq (lsp--workspace-status w) 'initialized)) (lsp-workspaces))
       t))

(defun ks-probes-since (count)
  "Background probes that ran to an end among the notifications after the first COUNT."
  (seq-filter (lambda (params) (and (eq (gethash "background" params) t)
                                    (not (eq (gethash "cancelled" params) t))))
              (butlast ks-finished count)))

(defun ks-verdict (params)
  (let ((result (gethash "result" params)))
    (if (eq (gethash "passed" result) t)
        "PASS"
      (format "FAIL (%s)" (or (and (hash-table-p (gethash "error" result))
                                   (gethash "kind" (gethash "error" result)))
                              "gate")))))

(defun ks-rewrite-reload-save (reload shift edit)
  "Rewrite kernel.py on disk (the kernel moves down SHIFT lines), RELOAD, EDIT, save."
  (let* ((file buffer-file-name)
         (start (length ks-finished))
         (kernel-line (or (car (ks-lens "^best ")) -100))  ; no lens: `lens_moved' fails
         (header (mapconcat (lambda (i) (format "# rewritten by an agent, line %d\n" i))
                            (number-sequence 1 shift) ""))
         (report (list (cons 'reload reload))))
    (with-temp-file (concat file ".tmp")
      (insert header)
      (insert-file-contents file))
    (rename-file (concat file ".tmp") file t)  ; as agents do: a new file renamed over the old one
    (pcase reload
      ("revert-buffer" (revert-buffer t t))  ; as M-x revert-buffer: the major mode runs again
      ("auto-revert" (auto-revert-mode 1)
       (ks-wait 30 (lambda () (save-excursion (goto-char (point-min)) (looking-at "# rewritten"))))))
    (push (cons 'buffer_has_rewrite (save-excursion (goto-char (point-min)) (looking-at "# rewritten")))
          report)
    (push (cons 'served (ks-wait 30 #'ks-served)) report)
    (push (cons 'lens_moved (ks-wait 30 (lambda () (ks-lens "^best " (+ kernel-line shift))))) report)
    (push (cons 'lenses (vconcat (mapcar (lambda (i) (list (cons 'line (car i)) (cons 'text (cdr i))))
                                         (ks-overlays))))
          report)
    ;; the probe the rewrite set off (the daemon watches the disk)
    (push (cons 'rewrite_probed (ks-wait 30 (lambda () (ks-probes-since start)))) report)
    (let ((before (length ks-finished)))
      (funcall edit)
      (push (cons 'edited (buffer-modified-p)) report)
      (save-buffer)
      (push (cons 'probed (ks-wait 90 (lambda () (ks-probes-since before)))) report)
      (let* ((probe (car (ks-probes-since before)))
             (verdict (and probe (ks-verdict probe))))
        (push (cons 'verdict verdict) report)
        (push (cons 'passed (and probe (eq (gethash "passed" (gethash "result" probe)) t))) report)
        (ks-wait 30 (lambda ()
                      (let ((lens (ks-lens "^last probe: ")))
                        (and lens verdict (string-prefix-p (concat "last probe: " verdict) (cdr lens))
                             (not (string-match-p "stale" (cdr lens)))))))))
    (push (cons 'lenses_after_save
                (vconcat (mapcar (lambda (i) (list (cons 'line (car i)) (cons 'text (cdr i)))) (ks-overlays))))
          report)
    (push (cons 'still_served (ks-served)) report)
    report))

(defun ks-replace (from to)
  (lambda ()
    (save-excursion
      (goto-char (point-min))
      (when (search-forward from nil t)
        (replace-match to t t)))))

(condition-case err
    (progn
      (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
      (python-mode)
      (lsp)
      (ks-wait 30 #'ks-served)
      (push (cons 'initialized (and (lsp-workspaces) t)) ks-result)
      (let* ((lenses (lsp-request "textDocument/codeLens"
                                  (list :textDocument (lsp--text-document-identifier))))
             (titles (mapcar (lambda (lens) (lsp:command-title (lsp:code-lens-command? lens))) lenses)))
        (push (cons 'lenses (vconcat titles)) ks-result))
      (let ((mask (lsp-request "workspace/executeCommand"
                               (list :command "kernelscope.maskHalf"
                                     :arguments (vector (list :workspace (getenv "KS_WS")
                                                              :dryRun t :seed 1))))))
        (push (cons 'mask_best (gethash "best_version" mask)) ks-result))
      (lsp-lens-mode 1)
      (lsp-lens-refresh t)
      (ks-wait 15 (lambda () (ks-lens "^best ")))
      (push (cons 'lens_overlays (length (bound-and-true-p lsp-lens--overlays))) ks-result)
      (push (cons 'kernel_lens_line (car (ks-lens "^best "))) ks-result)
      ;; the kernel lens clicked, as lsp-lens-mode runs it: the history shown in a buffer
      (let* ((lenses (lsp-request "textDocument/codeLens"
                                  (list :textDocument (lsp--text-document-identifier))))
             (lens (seq-find (lambda (l) (string-prefix-p "best " (lsp:command-title (lsp:code-lens-command? l))))
                             lenses)))
        (save-window-excursion
          (funcall-interactively (lsp-lens--create-interactive-command (lsp:code-lens-command? lens))))
        (push (cons 'lens_click (let ((shown (get-buffer "*kernelscope showHistory*")))
                                  (and shown (with-current-buffer shown
                                               (list (cons 'text (buffer-string))
                                                     (cons 'read_only buffer-read-only))))))
              ks-result))
      (push (cons 'reloads
                  (vector
                   ;; the edit breaks the kernel (its probe cannot pass), the next one fixes it
                   (ks-rewrite-reload-save "revert-buffer" 3 (ks-replace "x + y, mask=mask" "x - y, mask=mask"))
                   (ks-rewrite-reload-save "auto-revert" 2 (ks-replace "x - y, mask=mask" "x + y, mask=mask"))))
            ks-result)
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
