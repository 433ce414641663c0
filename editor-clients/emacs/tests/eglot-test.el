;;; eglot-test.el --- kernelscope with eglot in `emacs --batch' -*- lexical-binding: t; -*-
;; eglot shows no code lenses: hover on a kernel name carries its experiment table.
;; Driven by tests/test_editor_emacs.py; writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))
(require 'eglot)

(condition-case err
    (progn
      (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
      (python-mode)
      (apply #'eglot (eglot--guess-contact))
      (let ((deadline (+ (float-time) 30)))
        (while (and (< (float-time) deadline) (not (eglot-current-server)))
          (accept-process-output nil 0.1)))
      (push (cons 'connected (and (eglot-current-server) t)) ks-result)
      (goto-char (point-min))
      (search-forward "def add_kernel")
      (backward-char 3)
      (let* ((server (eglot-current-server))
             (hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams)))
             (contents (plist-get hover :contents)))
        (push (cons 'hover (plist-get contents :value)) ks-result))
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
