;;; kernelscope.el --- kernelscope for lsp-mode and eglot -*- lexical-binding: t; -*-

;; lsp-mode shows code lenses (enable `lsp-lens-mode'); eglot has none, so there the inlay
;; hints at the end of each kernel's `def' line and hover on a kernel name carry the facts.
;; Load this file, then `M-x lsp' (lsp-mode) or `M-x eglot' (eglot) in kernel.py.

;;; Code:

(defgroup kernelscope nil "GPU kernel optimization workspaces." :group 'tools)

(defcustom kernelscope-command '("kernelscope" "serve")
  "Command line that starts the kernelscope daemon."
  :type '(repeat string))

(defcustom kernelscope-initialization-options '(:kernelscope (:trusted :json-false))
  "initializationOptions sent to the daemon (see the kernelscope README for settings)."
  :type 'sexp)

(defun kernelscope--workspace-p (dir)
  (and dir (file-exists-p (expand-file-name "kernel.py" dir))
       (file-directory-p (expand-file-name "memory" dir))))

(defun kernelscope-root (&optional file)
  "The optimization workspace holding FILE (default: the current buffer's file)."
  (let ((file (or file buffer-file-name)))
    (when file (locate-dominating-file file #'kernelscope--workspace-p))))

;;;; lsp-mode

(with-eval-after-load 'lsp-mode
  (add-to-list 'lsp-language-id-configuration '(python-mode . "python"))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () kernelscope-command))
    :activation-fn (lambda (file-name _mode)
                     (and (string-suffix-p ".py" file-name) (kernelscope-root file-name)))
    :initialization-options (lambda () kernelscope-initialization-options)
    :add-on? t
    :server-id 'kernelscope)))

;;;; eglot

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(python-mode . ,(lambda (&rest _)
                                  (append kernelscope-command
                                          (list :initializationOptions
                                                kernelscope-initialization-options))))))

(provide 'kernelscope)
;;; kernelscope.el ends here
