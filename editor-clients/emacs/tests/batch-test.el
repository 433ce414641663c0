;;; batch-test.el --- kernelscope with lsp-mode in `emacs --batch' -*- lexical-binding: t; -*-
;; Driven by tests/test_editor_emacs.py: opens kernel.py of $KS_WS, starts lsp-mode with the
;; kernelscope client only, asks for code lenses and runs a command; writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))
(require 'lsp-mode)

(setq lsp-auto-guess-root t
      lsp-enable-snippet nil
      lsp-restart 'ignore
      lsp-enable-file-watchers nil
      lsp-keep-workspace-alive nil
      lsp-enabled-clients '(kernelscope)
      lsp-session-file (make-temp-file "lsp-session"))

(condition-case err
    (progn
      (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
      (python-mode)
      (lsp)
      (let ((deadline (+ (float-time) 30)))
        (while (and (< (float-time) deadline)
                    (not (seq-find (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                   (lsp-workspaces))))
          (accept-process-output nil 0.1)))
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
      (let ((deadline (+ (float-time) 15)))
        (while (and (< (float-time) deadline) (null (bound-and-true-p lsp-lens--overlays)))
          (accept-process-output nil 0.1)))
      (push (cons 'lens_overlays (length (bound-and-true-p lsp-lens--overlays))) ks-result)
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
