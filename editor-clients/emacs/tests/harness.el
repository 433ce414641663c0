;;; harness.el --- shared set-up of the `emacs --batch' tests -*- lexical-binding: t; -*-
;; Loaded first by batch-test.el (lsp-mode) and eglot-test.el: Debian's ELPA packages,
;; kernelscope.el from $KS_EL (its client definitions wait for lsp-mode or eglot to load), the
;; daemon command and settings from $KS_CMD/$KS_DB, `ks-wait' (PREDICATE true within SECONDS,
;; serving process output meanwhile), `ks-lsp-mode' (lsp-mode with kernelscope its only client,
;; for the lsp-mode tests), and `ks-finish', which writes `ks-result' as JSON to $KS_OUT and exits.

(require 'package)
;; Debian's elpa-* packages live here; -Q skips the site start-up that would add them.
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'json)
(load (getenv "KS_EL"))

(setq kernelscope-command (append (json-read-from-string (getenv "KS_CMD")) nil)
      kernelscope-initialization-options
      ;; trusted, as a user's own settings would say: saving kernel.py re-benchmarks it
      (list :kernelscope (list :dbUrl (getenv "KS_DB") :mode "interpreter" :trusted t
                               :seeds 1 :debounceMs 100)))

(defvar ks-result (list))

(defun ks-wait (seconds predicate)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (< (float-time) deadline) (not (funcall predicate)))
      (accept-process-output nil 0.1))
    (and (funcall predicate) t)))

(defun ks-lsp-mode ()
  "lsp-mode as the lsp-mode tests run it: kernelscope the only client, no snippets, no file
watchers, no restart, a session file of the test's own."
  (require 'lsp-mode)
  (setq lsp-auto-guess-root t
        lsp-enable-snippet nil
        lsp-restart 'ignore
        lsp-enable-file-watchers nil
        lsp-keep-workspace-alive nil
        lsp-enabled-clients '(kernelscope)
        lsp-session-file (make-temp-file "lsp-session")))

(defun ks-finish (code)
  "Write `ks-result' to $KS_OUT and exit with CODE. The servers' filters are silenced first:
`kill-emacs' still delivers output read before it (a daemon's `workspace/inlayHint/refresh'
after a save, say), and eglot's reply to a process being closed raised out of `kill-emacs',
exit 255 after every check had passed (about 1 run in 20 of the README test)."
  (with-temp-file (getenv "KS_OUT") (insert (json-encode ks-result)))
  (dolist (process (process-list))
    (set-process-filter process #'ignore)
    (set-process-sentinel process #'ignore))
  (kill-emacs code))
