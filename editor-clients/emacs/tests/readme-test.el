;;; readme-test.el --- a workspace README's warnings, lsp-mode or eglot ($KS_CLIENT) -*- lexical-binding: t; -*-
;; Driven by tests/editors/test_editor_emacs.py: the workspace's README.md (its stop condition
;; written `4,32TB/s') opened in $KS_README_MODE (markdown-mode, or fundamental-mode: what a user
;; without markdown-mode gets) and the client started there; the daemon's warning is on its
;; line; kernel.py opened next is served by the same daemon; the README gets no inlay hints;
;; the line fixed in the buffer clears the warning, a save keeps it cleared, `M-x revert-buffer'
;; (the major mode run again: fundamental-mode too, where no markdown-mode is) keeps it served.
;; eglot: a user's own markdown server ("my-marksman") is still eglot's guess for any other
;; markdown file, in the workspace or not, and no other markdown buffer joins the daemon.
;; Writes JSON to $KS_OUT.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)))

(defvar ks-client (getenv "KS_CLIENT") "\"lsp-mode\" or \"eglot\".")
(defvar ks-mode (intern (getenv "KS_README_MODE")))
(defvar ks-published 0 "publishDiagnostics for the README.")
(defvar ks-readme (expand-file-name "README.md" (getenv "KS_WS")))

(if (equal ks-client "eglot")
    (progn
      (require 'eglot)
      (add-to-list 'eglot-server-programs '(markdown-mode . ("my-marksman")))  ; the user's own
      (advice-add 'eglot-handle-notification :before
                  (lambda (_server method &rest params)
                    (when (and (eq method 'textDocument/publishDiagnostics)
                               (equal (eglot--uri-to-path (plist-get params :uri)) ks-readme))
                      (cl-incf ks-published)))))
  (ks-lsp-mode)
  (advice-add 'lsp--on-diagnostics :before
              (lambda (_workspace params)
                (when (equal (lsp--uri-to-path (gethash "uri" params)) ks-readme)
                  (cl-incf ks-published)))))

(defun ks-server ()
  "The daemon serving this buffer (an eglot server or an lsp-mode workspace), or nil."
  (if (equal ks-client "eglot")
      (and eglot--managed-mode (kernelscope--eglot-server))
    (kernelscope--lsp-workspace)))

(defun ks-served ()
  (and (ks-server)
       (or (equal ks-client "eglot")
           (eq (lsp--workspace-status (ks-server)) 'initialized))
       t))

(defun ks-warnings ()
  "This buffer's diagnostics as the client keeps them: ((LINE . MESSAGE) ...), LINE 0-based."
  (if (equal ks-client "eglot")
      (mapcar (lambda (d) (cons (1- (line-number-at-pos (flymake-diagnostic-beg d)))
                                (flymake-diagnostic-text d)))
              (flymake-diagnostics))
    (mapcar (lambda (d) (cons (lsp:position-line (lsp:range-start (lsp:diagnostic-range d)))
                              (lsp:diagnostic-message d)))
            (gethash (lsp--fix-path-casing buffer-file-name) (lsp-diagnostics t)))))

(defun ks-comma-warning ()
  (seq-find (lambda (w) (string-match-p "4,32 has a decimal comma" (cdr w))) (ks-warnings)))

(defun ks-guess (&optional interactive)
  "eglot's guess for this buffer, as `M-x eglot' (INTERACTIVE) or `eglot-ensure' asks it:
\(CLASS PROGRAM)."
  (let ((guess (eglot--guess-contact interactive)))
    (vector (symbol-name (nth 2 guess)) (car (nth 3 guess)))))

(condition-case err
    (progn
      (when (eq ks-mode 'fundamental-mode)  ; no mode for .md: what `normal-mode' picks too
        (require 'markdown-mode)  ; loaded now (eglot loads it later), then not for .md
        (setq auto-mode-alist (seq-remove (lambda (entry) (eq (cdr entry) 'markdown-mode)) auto-mode-alist)))
      (find-file ks-readme)
      (funcall ks-mode)
      (push (cons 'mode (symbol-name major-mode)) ks-result)
      (if (equal ks-client "eglot")
          (progn
            (push (cons 'guess (ks-guess t)) ks-result)
            (call-interactively #'eglot))
        (lsp))
      (push (cons 'served (ks-wait 60 #'ks-served)) ks-result)
      (let ((readme (current-buffer))
            (server (ks-server)))
        (push (cons 'shown (ks-wait 60 #'ks-comma-warning)) ks-result)
        (push (cons 'warning (let ((w (ks-comma-warning))) (and w (list (cons 'line (car w)) (cons 'message (cdr w))))))
              ks-result)
        (push (cons 'readme_hints_mode (bound-and-true-p kernelscope-hints-mode)) ks-result)

        ;; kernel.py: the same daemon
        (find-file (expand-file-name "kernel.py" (getenv "KS_WS")))
        (unless (equal ks-client "eglot") (lsp))
        (push (cons 'kernel_served (ks-wait 60 #'ks-served)) ks-result)
        (push (cons 'same_server (eq (ks-server) server)) ks-result)

        (when (equal ks-client "eglot")
          ;; any other markdown file: the user's own server, in the workspace or not
          (dolist (file (list (expand-file-name "plans/notes.md" (getenv "KS_WS")) (getenv "KS_PLAIN_README")))
            (find-file file)
            (markdown-mode)
            (push (cons (if (string-prefix-p (getenv "KS_WS") file) 'notes 'plain)
                        (list (cons 'guess (ks-guess)) (cons 'managed (and eglot--managed-mode t))))
                  ks-result)))

        ;; the line fixed in the README's buffer, then saved
        (switch-to-buffer readme)
        (goto-char (point-min))
        (search-forward "4,32TB/s")
        (replace-match "4.32TB/s" t t)
        (when (equal ks-client "eglot")
          (eglot--signal-textDocument/didChange))  ; what eglot's idle timer sends
        (push (cons 'cleared (ks-wait 60 (lambda () (null (ks-warnings))))) ks-result)
        (let ((before ks-published))
          (save-buffer)
          (push (cons 'published_after_save (ks-wait 60 (lambda () (> ks-published before)))) ks-result))
        (push (cons 'after_save (vconcat (mapcar #'cdr (ks-warnings)))) ks-result)
        (push (cons 'still_served (ks-served)) ks-result)
        (revert-buffer t t)
        (push (cons 'mode_after_revert (symbol-name major-mode)) ks-result)
        (push (cons 'served_after_revert (ks-wait 30 #'ks-served)) ks-result))
      (ks-finish 0))
  (error (push (cons 'error (format "%S" err)) ks-result)
         (ks-finish 1)))
