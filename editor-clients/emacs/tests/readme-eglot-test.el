;;; readme-eglot-test.el --- a workspace README beside your own markdown server, eglot ($KS_SCEN) -*- lexical-binding: t; -*-
;; Driven by tests/editors/test_editor_emacs.py; the workspace is a git repository (one eglot
;; project) with plans/notes.md; "my-marksman" (a pygls server that serves nothing) is the
;; user's markdown server.  Which server manages each buffer, how many kernelscope daemons run,
;; and what each server is told about the README (didOpen, didClose) go to $KS_OUT as JSON.
;;   daemon-first   README and notes.md with my-marksman, kernel.py's daemon, then M-x eglot in
;;                  the README: it joins that daemon (no second one), my-marksman keeps notes.md
;;   readme-starts  README and notes.md with my-marksman, M-x eglot in the README: the daemon
;;                  starts and the README moves to it; kernel.py opened next is served by it
;;   ensure         eglot-ensure on markdown-mode-hook and python-mode-hook, README opened first:
;;                  my-marksman (eglot-ensure starts no daemon); kernel.py: the daemon; the
;;                  README opened again joins it
;;   churn          kernel.py served, then the README opened (markdown-mode), closed, opened
;;                  without markdown-mode (fundamental-mode): one didOpen per opening

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))
(require 'eglot)
(require 'markdown-mode)

(defvar ks-ws (getenv "KS_WS"))
(defvar ks-readme (expand-file-name "README.md" ks-ws))
(defvar ks-kernel (expand-file-name "kernel.py" ks-ws))
(defvar ks-notes (expand-file-name "plans/notes.md" ks-ws))
(defvar ks-sent nil "(SERVER METHOD) sent about the README, newest first.")

(add-to-list 'eglot-server-programs
             `(markdown-mode . (,(car kernelscope-command) "-c"
                                "from pygls.lsp.server import LanguageServer; LanguageServer('my-marksman', '0').start_io()")))

(advice-add 'jsonrpc-notify :before
            (lambda (server method params)
              (when (and (memq method '(:textDocument/didOpen :textDocument/didClose))
                         (equal (eglot--uri-to-path (plist-get (plist-get params :textDocument) :uri))
                                ks-readme))
                (push (list (ks-name server) (substring (symbol-name method) 14)) ks-sent))))

(defun ks-name (server)
  (if (object-of-class-p server 'kernelscope-eglot-server) "kernelscope" "my-marksman"))

(defun ks-who (file)
  "Which server manages FILE's buffer: \"kernelscope\", \"my-marksman\" or nil."
  (let ((buffer (get-file-buffer file)))
    (and buffer
         (with-current-buffer buffer
           (and eglot--managed-mode (eglot-current-server) (ks-name (eglot-current-server)))))))

(defun ks-servers (name)
  "The live servers NAME (`ks-name'), every project."
  (let (found)
    (maphash (lambda (_project servers)
               (dolist (server servers)
                 (when (and (equal (ks-name server) name) (jsonrpc-running-p server))
                   (cl-pushnew server found))))
             eglot--servers-by-project)
    found))

(defun ks-daemons () (length (ks-servers "kernelscope")))

(defun ks-open (file &optional then)
  (find-file file)
  (when then (funcall then))
  (run-hooks 'post-command-hook)  ; what eglot-ensure waits for
  (current-buffer))

(defun ks-note (key value) (push (cons key value) ks-result))

(defun ks-m-x-eglot ()
  "M-x eglot, as the person runs it; eglot's own questions are noted and answered no."
  (cl-letf (((symbol-function 'y-or-n-p) (lambda (prompt) (ks-note 'asked prompt) nil)))
    (call-interactively #'eglot)))

(defun ks-marksman-serves-markdown ()
  "README.md and notes.md open in markdown-mode, managed by my-marksman (started there by a
non-interactive eglot, as `eglot-ensure' would)."
  (ks-open ks-readme)
  (ks-open ks-notes)
  (apply #'eglot (eglot--guess-contact))
  (ks-wait 60 (lambda () (and (ks-who ks-notes) (ks-who ks-readme))))
  (ks-note 'readme_before (ks-who ks-readme)))

(defun ks-after ()
  (ks-note 'readme (ks-who ks-readme))
  (ks-note 'kernel (ks-who ks-kernel))
  (ks-note 'notes (ks-who ks-notes))
  (ks-note 'same_server (eq (with-current-buffer (get-file-buffer ks-readme) (eglot-current-server))
                            (with-current-buffer (get-file-buffer ks-kernel) (eglot-current-server))))
  (ks-note 'daemons (ks-daemons))
  (ks-note 'marksman_live (length (ks-servers "my-marksman")))
  (ks-note 'sent (vconcat (mapcar (lambda (s) (string-join s " ")) (reverse ks-sent)))))

(condition-case err
    (progn
      (pcase (getenv "KS_SCEN")
        ("daemon-first"
         (ks-marksman-serves-markdown)
         (ks-open ks-kernel)
         (ks-m-x-eglot)
         (ks-wait 60 (lambda () (ks-who ks-kernel)))
         (setq ks-sent nil)
         (with-current-buffer (get-file-buffer ks-readme) (ks-m-x-eglot))
         (ks-wait 60 (lambda () (equal (ks-who ks-readme) "kernelscope")))
         (ks-after))
        ("readme-starts"
         (ks-marksman-serves-markdown)
         (setq ks-sent nil)
         (with-current-buffer (get-file-buffer ks-readme) (ks-m-x-eglot))
         (ks-wait 60 (lambda () (equal (ks-who ks-readme) "kernelscope")))
         (ks-open ks-kernel)
         (ks-wait 60 (lambda () (ks-who ks-kernel)))
         (ks-after))
        ("ensure"
         (add-hook 'markdown-mode-hook #'eglot-ensure)
         (add-hook 'python-mode-hook #'eglot-ensure)
         (ks-open ks-readme)
         (ks-wait 60 (lambda () (ks-who ks-readme)))
         (ks-note 'readme_first (ks-who ks-readme))
         (ks-note 'daemons_first (ks-daemons))
         (ks-open ks-kernel)
         (ks-wait 60 (lambda () (ks-who ks-kernel)))
         (ks-open ks-notes)
         (ks-wait 60 (lambda () (ks-who ks-notes)))
         (kill-buffer (get-file-buffer ks-readme))
         (ks-open ks-readme)
         (ks-after))
        ("churn"
         (ks-open ks-kernel)
         (ks-m-x-eglot)
         (ks-wait 60 (lambda () (ks-who ks-kernel)))
         (ks-open ks-readme)
         (ks-note 'mode (symbol-name major-mode))
         (ks-note 'readme_markdown (ks-who ks-readme))
         (kill-buffer)
         ;; no markdown-mode: the README stays in fundamental-mode
         (setq auto-mode-alist (seq-remove (lambda (entry) (eq (cdr entry) 'markdown-mode)) auto-mode-alist))
         (ks-open ks-readme)
         (ks-note 'mode_then (symbol-name major-mode))
         (ks-after)))
      (ks-finish 0))
  (error (ks-note 'error (format "%S" err))
         (ks-finish 1)))
