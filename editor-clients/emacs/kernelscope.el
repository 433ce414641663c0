;;; kernelscope.el --- kernelscope for lsp-mode and eglot -*- lexical-binding: t; -*-

;; lsp-mode shows code lenses (`lsp-lens-mode', on by default); eglot has none, so there the
;; inlay hints at the end of each kernel's `def' line and hover on a kernel name carry the facts.
;; Load this file, then `M-x lsp' (lsp-mode) or `M-x eglot' (eglot) in kernel.py.
;;
;; Agents rewrite kernel.py on disk all the time: a buffer that lsp-mode served stays served
;; after `revert-buffer' (which re-runs the major mode, and lsp-mode disconnects on that) and
;; after `auto-revert-mode'; eglot reconnects by itself.

;;; Code:

(require 'cl-lib)

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

(defun kernelscope--job-finished (params)
  "Say how a job the user started ended; background probes speak through lenses and hints."
  (unless (eq (plist-get params :background) t)
    (message "kernelscope %s: %s" (or (plist-get params :kind) "job")
             (or (plist-get params :error)
                 (and (eq (plist-get params :cancelled) t) "cancelled")
                 "done"))))

;;;; lsp-mode

(defun kernelscope--lsp-job-finished (workspace params)
  (kernelscope--job-finished
   (if (hash-table-p params)
       (list :kind (gethash "kind" params) :error (gethash "error" params)
             :cancelled (gethash "cancelled" params) :background (gethash "background" params))
     params))
  ;; lsp-mode ignores the server's lens refreshes unless `lsp-lens-enable' is set: redraw here
  (dolist (buffer (lsp--workspace-buffers workspace))
    (when (buffer-local-value 'lsp-lens-mode buffer)
      (lsp-lens-refresh t buffer))))

(defvar-local kernelscope--reconnect nil
  "While `revert-buffer' re-runs the major mode of a buffer lsp-mode served: `lens' if
`lsp-lens-mode' was on, else t.")
(put 'kernelscope--reconnect 'permanent-local t)

(defun kernelscope--before-revert ()
  (setq kernelscope--reconnect
        (and (bound-and-true-p lsp-mode) (kernelscope-root)
             (if (bound-and-true-p lsp-lens-mode) 'lens t))))

(defun kernelscope--lens-mode-on ()
  (lsp-lens-mode 1))

(defun kernelscope--after-major-mode ()
  ;; `normal-mode' passes through fundamental-mode first: wait for the real one
  (when (and kernelscope--reconnect (not (eq major-mode 'fundamental-mode)))
    (let ((lens (eq kernelscope--reconnect 'lens)))
      (setq kernelscope--reconnect nil)
      (unless (bound-and-true-p lsp-mode)
        (when lens
          (add-hook 'lsp-configure-hook #'kernelscope--lens-mode-on nil t))
        (lsp)))))

(defun kernelscope--after-revert ()
  (setq kernelscope--reconnect nil))

(with-eval-after-load 'lsp-mode
  (add-to-list 'lsp-language-id-configuration '(python-mode . "python"))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () kernelscope-command))
    :activation-fn (lambda (file-name _mode)
                     (and (string-suffix-p ".py" file-name) (kernelscope-root file-name)))
    :initialization-options (lambda () kernelscope-initialization-options)
    :notification-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "kernelscope/jobFinished" #'kernelscope--lsp-job-finished handlers)
      handlers)
    :add-on? t
    :server-id 'kernelscope))
  (add-hook 'before-revert-hook #'kernelscope--before-revert)
  (add-hook 'after-change-major-mode-hook #'kernelscope--after-major-mode)
  (add-hook 'after-revert-hook #'kernelscope--after-revert))

;;;; eglot

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(python-mode . ,(lambda (&rest _)
                                  (append kernelscope-command
                                          (list :initializationOptions
                                                kernelscope-initialization-options)))))
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql kernelscope/jobFinished)) &rest params)
    (kernelscope--job-finished params)))

(provide 'kernelscope)
;;; kernelscope.el ends here
