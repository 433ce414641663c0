;;; kernelscope.el --- kernelscope for lsp-mode and eglot -*- lexical-binding: t; -*-

;; lsp-mode shows code lenses (`lsp-lens-mode', on by default); eglot has none, so there the
;; inlay hints at the end of each kernel's `def' line and hover on a kernel name carry the facts.
;; Load this file, then `M-x lsp' (lsp-mode) or `M-x eglot' (eglot) in kernel.py.  The
;; workspace's README.md is served too (the daemon's warnings on its stop conditions), in any
;; major mode; with eglot it joins the daemon already serving kernel.py.
;;
;; The workspace's history: hover on any line says which version introduced it and what it
;; measured; inlay hints show the values already tried at each meta-parameter; a save of code
;; already recorded gets an "identical to vN" diagnostic (and no benchmark);
;; `M-x kernelscope-compare' shows two versions (numbers, actions, code diff).
;; `M-x kernelscope-command' runs any daemon command (mask half, an iteration, a benchmark...) on
;; the buffer's workspace: eglot has no lenses to click.
;; Inlay hints (`kernelscope-inlay-hints'): through the client where it has them, else drawn by
;; `kernelscope-hints-mode' (lsp-mode 8.0 and eglot 1.9 have none).
;;
;; Agents rewrite kernel.py on disk all the time: a buffer that lsp-mode served stays served
;; after `revert-buffer' (which re-runs the major mode, and lsp-mode disconnects on that) and
;; after `auto-revert-mode'; eglot reconnects by itself.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'json)

(defgroup kernelscope nil "GPU kernel optimization workspaces." :group 'tools)

(defcustom kernelscope-command '("kernelscope" "serve")
  "Command line that starts the kernelscope daemon."
  :type '(repeat string))

(defcustom kernelscope-initialization-options nil
  "initializationOptions sent to the daemon (see the kernelscope README for settings), e.g.
'(:kernelscope (:dbUrl \"/path/exp.sqlite\")).  nil sends none: the daemon reads the user's
~/.config/kernelscope/config.toml, whose `trusted' list says which workspaces are
re-benchmarked on save; a :trusted here replaces that list."
  :type 'sexp)

(defconst kernelscope--vocabulary-file
  (expand-file-name "../commands.json" (file-name-directory (or load-file-name buffer-file-name)))
  "editor-clients/commands.json (written by `kernelscope schema --commands').")

(defcustom kernelscope-schema-command nil
  "Command line that prints the daemon's vocabulary (`kernelscope schema --commands'), read
when kernelscope.el runs outside the repository (no ../commands.json).  nil: derived from
`kernelscope-command' (\"serve\" and what follows becomes \"schema --commands\"; \"-m
kernelscope...\" becomes \"-m kernelscope.daemon.cli.main schema --commands\")."
  :type '(choice (const nil) (repeat string)))

(defun kernelscope--schema-command ()
  "`kernelscope-schema-command', else derived from `kernelscope-command' (nil if it cannot be)."
  (or kernelscope-schema-command
      (let ((serve (seq-position kernelscope-command "serve"))
            (module (seq-position kernelscope-command "-m")))
        (cond (serve (append (seq-take kernelscope-command serve) '("schema" "--commands")))
              ((and module (string-prefix-p "kernelscope" (or (nth (1+ module) kernelscope-command) "")))
               (append (seq-take kernelscope-command module)
                       '("-m" "kernelscope.daemon.cli.main" "schema" "--commands")))))))

(defvar kernelscope--vocabulary 'unread)

(defun kernelscope--vocabulary ()
  "The daemon's vocabulary, read once: commands.json beside this package, else what
`kernelscope--schema-command' prints; a failure is said, and the rule read again once that
command changes."
  (when (or (eq kernelscope--vocabulary 'unread)
            (and (eq (car-safe kernelscope--vocabulary) 'failed)
                 (not (equal (cdr kernelscope--vocabulary) (kernelscope--schema-command)))))
    (let ((json-object-type 'alist) (json-array-type 'list) (json-key-type 'string)
          (schema (kernelscope--schema-command))
          problem)
      (setq kernelscope--vocabulary
            (if (file-readable-p kernelscope--vocabulary-file)
                (ignore-errors (json-read-file kernelscope--vocabulary-file))
              (with-temp-buffer
                (let ((status (if schema
                                  (condition-case err (apply #'call-process (car schema) nil t nil (cdr schema))
                                    (error (error-message-string err)))
                                "no command")))
                  (if (eq status 0)
                      (progn (goto-char (point-min)) (ignore-errors (json-read)))
                    (setq problem (format "%S: %s %s" schema status
                                          (string-trim (buffer-substring (point-min) (min (point-max) 300)))))
                    nil)))))
      (unless kernelscope--vocabulary
        (message "kernelscope: cannot read the daemon workspace rule, so no buffer is served: %s. Set kernelscope-schema-command (or kernelscope-command)"
                 (or problem (format "%S printed no JSON" schema)))
        (setq kernelscope--vocabulary (cons 'failed schema)))))
  (unless (or (eq kernelscope--vocabulary 'unread) (eq (car-safe kernelscope--vocabulary) 'failed))
    kernelscope--vocabulary))

(defun kernelscope--workspace-p (dir)
  "The server's rule for an optimization workspace, read as data (commands.json's
workspaceRule, never copied): every required file, and a required folder or a README line
opening the tagged fence. Only says where to start the server; commands take the workspace
the server names (`kernelscope/workspaces')."
  (let ((rule (cdr (assoc "workspaceRule" (kernelscope--vocabulary)))))
    (and dir rule
         (seq-every-p (lambda (name) (file-exists-p (expand-file-name name dir)))
                      (cdr (assoc "files" rule)))
         (or (seq-some (lambda (name) (file-directory-p (expand-file-name name dir)))
                       (cdr (assoc "dirs" rule)))
             (let ((readme (expand-file-name (cdr (assoc "readme" rule)) dir))
                   (fence (cdr (assoc "fence" rule))))
               (and fence (file-readable-p readme)
                    (with-temp-buffer
                      (insert-file-contents readme)
                      (re-search-forward
                       (concat "^[ \t]*\\(```+\\|~~~+\\)[ \t]*" (regexp-quote fence) "[ \t]*$")
                       nil t))))))))

(defun kernelscope--server-workspace (file)
  "The innermost workspace holding FILE among those the serving daemon names, or nil."
  (let* ((answer (ignore-errors (kernelscope--request "kernelscope/workspaces" (make-hash-table))))
         (found (kernelscope--get answer "workspaces"))
         (file (file-truename file))
         best)
    (seq-doseq (entry found)
      (let ((root (kernelscope--get entry "workspace")))
        (when (and (stringp root) (or (string= file root) (string-prefix-p (concat root "/") file))
                   (or (null best) (> (length root) (length best))))
          (setq best root))))
    best))

(defun kernelscope-root (&optional file)
  "The optimization workspace holding FILE (default: the current buffer's file)."
  (let ((file (or file buffer-file-name)))
    (when file (locate-dominating-file file #'kernelscope--workspace-p))))

(defun kernelscope-readme-p (&optional file)
  "Whether FILE (default: the current buffer's file) is a workspace's own README: the rule's
README name (README.md) in a folder that is a workspace by the same rule.  The daemon
publishes its warnings (a stop condition it cannot check, a placeholder left in) while it is
open in a buffer the daemon serves."
  (let ((file (or file buffer-file-name))
        (name (cdr (assoc "readme" (cdr (assoc "workspaceRule" (kernelscope--vocabulary)))))))
    (and file (stringp name) (string= (file-name-nondirectory file) name)
         (kernelscope--workspace-p (file-name-directory (expand-file-name file))))))

(defcustom kernelscope-inlay-hints t
  "Show the daemon's inlay hints (values already tried, kernel summaries) in kernel.py.
Through the client's own inlay hints where it has them (`lsp-inlay-hints-mode',
`eglot-inlay-hints-mode'), else drawn by `kernelscope-hints-mode'."
  :type 'boolean)

(defface kernelscope-inlay-hint '((t :inherit shadow))
  "Inlay hints drawn by `kernelscope-hints-mode'.")

(defun kernelscope--get (object key)
  "KEY (a string) of a JSON OBJECT as lsp-mode (hash table) or eglot (plist) parsed it."
  (if (hash-table-p object)
      (gethash key object)
    (plist-get object (intern (concat ":" key)))))

;;;; the daemon serving a buffer, through whichever client serves it

(defun kernelscope--lsp-workspace ()
  "The lsp-mode workspace of the kernelscope daemon serving this buffer, if any."
  (and (bound-and-true-p lsp-mode)
       (seq-find (lambda (workspace)
                   (eq (lsp--client-server-id (lsp--workspace-client workspace)) 'kernelscope))
                 (lsp-workspaces))))

(defun kernelscope--eglot-server ()
  "The eglot server of this buffer if it is the kernelscope daemon."
  (let ((server (and (bound-and-true-p eglot--managed-mode) (eglot-current-server))))
    (and server
         (or (object-of-class-p server 'kernelscope-eglot-server)
             (equal (plist-get (ignore-errors (eglot--server-info server)) :name) "kernelscope"))
         server)))

(defun kernelscope--client ()
  "How this buffer reaches its daemon: (lsp . WORKSPACE), (eglot . SERVER) or nil."
  (let (found)
    (cond ((setq found (kernelscope--lsp-workspace)) (cons 'lsp found))
          ((setq found (kernelscope--eglot-server)) (cons 'eglot found)))))

(defun kernelscope--client-or-lose ()
  "`kernelscope--client', or a user error saying how to start one."
  (or (kernelscope--client)
      (user-error "kernelscope: no kernelscope daemon serves %s (M-x lsp or M-x eglot in kernel.py)"
                  (buffer-name))))

(defun kernelscope--request (method params &optional callback)
  "Send METHOD with PARAMS to the daemon serving this buffer and return its result; with
CALLBACK, return at once and call it with the result (in this buffer, if still alive)."
  (let ((buffer (current-buffer)))
    (pcase (kernelscope--client-or-lose)
      (`(lsp . ,workspace)
       (with-lsp-workspace workspace
         (if callback
             (lsp-request-async method params callback :mode 'alive :error-handler #'ignore)
           (lsp-request method params))))
      (`(eglot . ,server)
       (when (fboundp 'eglot--signal-textDocument/didChange)
         (eglot--signal-textDocument/didChange))
       (if callback
           (jsonrpc-async-request server (intern (concat ":" method)) params
                                  :success-fn (lambda (result)
                                                (when (buffer-live-p buffer)
                                                  (with-current-buffer buffer
                                                    (funcall callback result))))
                                  :error-fn #'ignore :timeout-fn #'ignore)
         (jsonrpc-request server (intern (concat ":" method)) params))))))

(defun kernelscope--document ()
  "This buffer's TextDocumentIdentifier, as its client names it."
  (if (kernelscope--lsp-workspace) (lsp--text-document-identifier) (eglot--TextDocumentIdentifier)))

;;;; compare two versions

(defun kernelscope--versions (root)
  "The recorded versions of the workspace ROOT (memory/vN.json), oldest first."
  (let ((names (mapcar #'file-name-sans-extension
                       (directory-files (expand-file-name "memory" root) nil "\\`v[0-9]+\\.json\\'"))))
    (sort names (lambda (a b) (< (string-to-number (substring a 1)) (string-to-number (substring b 1)))))))

(defun kernelscope--root-or-lose ()
  (or (kernelscope-root)
      (user-error "kernelscope: %s is not in an optimization workspace (`kernelscope workspace -w DIR` says what a folder lacks)"
                  (buffer-name))))

(defun kernelscope--execute (command params)
  "Run the daemon COMMAND with PARAMS (a plist) on this buffer's workspace (the one the serving
daemon names, added as :workspace unless PARAMS has one) and return (ROOT . ANSWER); a refusal
is a `user-error' with the daemon's message."
  (let* ((guess (directory-file-name (expand-file-name (kernelscope--root-or-lose))))
         (_ (kernelscope--client-or-lose))
         (root (or (kernelscope--server-workspace buffer-file-name) guess))
         (params (if (plist-member params :workspace) params (append (list :workspace root) params))))
    (cons (plist-get params :workspace)
          (condition-case err
              (kernelscope--request "workspace/executeCommand"
                                    (list :command command :arguments (vector params)))
            (error (user-error "%s: %s" command
                               (or (alist-get 'jsonrpc-error-message (cdr-safe (cdr err)))
                                   (error-message-string err))))))))

(defun kernelscope--command-names ()
  "The daemon's command names (commands.json, or what `kernelscope schema --commands' prints)."
  (sort (mapcar #'car (cdr (assoc "commands" (kernelscope--vocabulary)))) #'string<))

(defvar lsp-response-timeout)
(defvar jsonrpc-default-request-timeout)

(defun kernelscope--confirms-p (command)
  "Whether COMMAND masks memory (commands.json's confirm): sent with confirm, the daemon asks
the person first (window/showMessageRequest, which lsp-mode and eglot answer with
`completing-read') and writes nothing unless they pick its first action."
  (eq t (cdr (assoc "confirm" (cdr (assoc command (cdr (assoc "commands" (kernelscope--vocabulary)))))))))

(defun kernelscope--asking (thunk)
  "THUNK's value, its request waiting as long as the person takes to answer the daemon's
question (lsp-mode and jsonrpc give up on a request after 10 s)."
  (let ((lsp-response-timeout most-positive-fixnum)
        (jsonrpc-default-request-timeout nil))
    (funcall thunk)))

(defun kernelscope-command (command &optional params)
  "Run the daemon COMMAND (\"kernelscope.benchmark\", ...) on this buffer's workspace, with
PARAMS: a plist, or a JSON object as text (with a prefix argument, asked for), e.g.
{\"dryRun\": true} for kernelscope.maskHalf.  Mask-half and restart are sent with confirm: the
daemon asks before it writes.  An answer with markdown (the history, a
comparison) is shown in a read-only buffer `*kernelscope NAME*', which is returned; any other
answer is said in the echo area and returned.  A job says how it ended when it ends."
  (interactive
   (progn (kernelscope--root-or-lose)
          (list (completing-read "kernelscope command: " (kernelscope--command-names) nil t "kernelscope.")
                (and current-prefix-arg (read-string "parameters (JSON object): " "{}")))))
  (let* ((params (if (stringp params)
                     (let ((json-object-type 'plist) (json-array-type 'vector) (json-false :json-false))
                       (condition-case nil (json-read-from-string params)
                         (error (user-error "kernelscope: parameters must be a JSON object, got %s" params))))
                   params))
         (asks (and (kernelscope--confirms-p command) (not (plist-member params :confirm))))
         (found (if asks  ; mask-half, restart: the daemon asks first
                    (kernelscope--asking (lambda () (kernelscope--execute command (append params '(:confirm t)))))
                  (kernelscope--execute command params)))
         (markdown (kernelscope--get (cdr found) "markdown")))
    (if (not (stringp markdown))
        (progn (message "%s: %s" command (string-trim (json-encode (cdr found))))
               (cdr found))
      (let ((buffer (kernelscope--markdown-buffer
                     (format "*kernelscope %s*" (string-remove-prefix "kernelscope." command))
                     markdown (car found))))
        (if (called-interactively-p 'any) (pop-to-buffer buffer) (display-buffer buffer))
        buffer))))

(defun kernelscope-compare (version-a version-b)
  "Compare VERSION-A with VERSION-B (\"v0\", \"v4\") of this buffer's workspace: the code diff,
the numbers per configuration, gates and actions, in a buffer `*kernelscope compare A..B*'.
Returns that buffer."
  (interactive
   (let* ((versions (kernelscope--versions (kernelscope--root-or-lose)))
          (a (completing-read "kernelscope compare version: " versions nil nil nil nil (car versions))))
     (list a (completing-read (format "compare %s with: " a) versions nil nil nil nil
                              (car (last versions))))))
  (let* ((found (kernelscope--execute "kernelscope.compare" (list :versionA version-a :versionB version-b)))
         (buffer (kernelscope--markdown-buffer (format "*kernelscope compare %s..%s*" version-a version-b)
                                               (kernelscope--get (cdr found) "markdown") (car found))))
    (if (called-interactively-p 'any) (pop-to-buffer buffer) (display-buffer buffer))
    buffer))

(defun kernelscope--markdown-buffer (name markdown root)
  "The read-only buffer NAME showing MARKDOWN (a daemon's answer) of the workspace ROOT."
  (let ((buffer (get-buffer-create name)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or markdown ""))
        (if (require 'markdown-mode nil t) (markdown-mode) (text-mode))
        (when (stringp root) (setq default-directory (file-name-as-directory root)))
        (goto-char (point-min))
        (view-mode 1)))  ; read-only, q quits
    buffer))

(defun kernelscope--lsp-run-lens (action)
  "A lens clicked in lsp-mode (ACTION, its Command) whose command masks memory (the restart):
lsp-mode would give up waiting after 10 s while the person reads the daemon's question; this
waits for the answer and says it."
  (let ((answer (kernelscope--asking
                 (lambda () (kernelscope--request "workspace/executeCommand"
                                                  (list :command (kernelscope--get action "command")
                                                        :arguments (or (kernelscope--get action "arguments") [])))))))
    (message "%s: %s" (kernelscope--get action "command") (string-trim (json-encode answer)))
    answer))

(defun kernelscope--lsp-show-answer (action)
  "A lens clicked in lsp-mode (ACTION, its Command): lsp-mode would run the daemon command and
drop the answer; this runs it and shows the answer's markdown (the history, a comparison) in a
read-only buffer `*kernelscope NAME*'. Returns that buffer."
  (let* ((command (kernelscope--get action "command"))
         (arguments (or (kernelscope--get action "arguments") []))
         (first (and (> (length arguments) 0) (elt arguments 0)))
         (answer (kernelscope--request "workspace/executeCommand"
                                       (list :command command :arguments arguments)))
         (buffer (kernelscope--markdown-buffer
                  (format "*kernelscope %s*" (string-remove-prefix "kernelscope." command))
                  (kernelscope--get answer "markdown")
                  (and first (kernelscope--get first "workspace")))))
    (pop-to-buffer buffer)
    buffer))

;;;; inlay hints, for clients without their own

(put 'kernelscope-hint 'kernelscope t)  ; the overlay category of the hints drawn here

(defvar-local kernelscope--hints-timer nil)
(defvar-local kernelscope--hints-retries 0
  "Empty answers in a row: asked again a second later, up to 30 times (a buffer can be opened
before the daemon has its workspace or history, and lsp-mode 8.0 passes no inlay refresh on).")

(defun kernelscope--hints-clear ()
  (remove-overlays (point-min) (point-max) 'category 'kernelscope-hint))

(defun kernelscope--point (line character)
  "The point of an LSP position (CHARACTER counted as characters: right for ASCII lines)."
  (save-excursion
    (goto-char (point-min))
    (forward-line line)
    (min (+ (point) character) (line-end-position))))

(defun kernelscope--hints-draw (hints)
  (kernelscope--hints-clear)
  (unless (keywordp hints)
    (seq-doseq (hint hints)
      (let* ((position (kernelscope--get hint "position"))
             (label (kernelscope--get hint "label"))
             (tooltip (kernelscope--get hint "tooltip"))
             (text (if (stringp label) label
                     (mapconcat (lambda (part) (or (kernelscope--get part "value") "")) label "")))
             (at (kernelscope--point (kernelscope--get position "line")
                                     (kernelscope--get position "character")))
             (overlay (make-overlay at at nil t nil)))
        (overlay-put overlay 'category 'kernelscope-hint)
        (overlay-put overlay 'after-string
                     (concat (if (eq (kernelscope--get hint "paddingLeft") t) " " "")
                             (propertize text 'face 'kernelscope-inlay-hint
                                         'help-echo (if (stringp tooltip) tooltip
                                                      (and tooltip (kernelscope--get tooltip "value"))))
                             (if (eq (kernelscope--get hint "paddingRight") t) " " "")))))))

(defun kernelscope--hints-refresh (buffer)
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq kernelscope--hints-timer nil)
      (when (bound-and-true-p kernelscope-hints-mode)
        (if (not (kernelscope--client))
            (kernelscope-hints-mode -1)  ; disconnected: a reconnection turns it on again
          (with-demoted-errors "kernelscope inlay hints: %S"
            (kernelscope--request
             "textDocument/inlayHint"
             (list :textDocument (kernelscope--document)
                   :range (list :start (list :line 0 :character 0)
                                :end (list :line (1+ (count-lines (point-min) (point-max)))
                                           :character 0)))
             #'kernelscope--hints-received)))))))

(defun kernelscope--hints-received (hints)
  (kernelscope--hints-draw hints)
  (if (and (or (null hints) (keywordp hints) (seq-empty-p hints)) (< kernelscope--hints-retries 30))
      (progn
        (setq kernelscope--hints-retries (1+ kernelscope--hints-retries))
        (run-with-timer 1 nil #'kernelscope--hints-schedule (current-buffer)))
    (setq kernelscope--hints-retries 0)))

(defun kernelscope--hints-schedule (&optional buffer)
  "Ask for the hints of BUFFER (default: this one) again, soon (requests coalesce)."
  (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
    (when (and (bound-and-true-p kernelscope-hints-mode) (not kernelscope--hints-timer))
      (setq kernelscope--hints-timer
            (run-with-timer 0.2 nil #'kernelscope--hints-refresh (current-buffer))))))

(define-minor-mode kernelscope-hints-mode
  "The kernelscope daemon's inlay hints, drawn as overlays by kernelscope.el for clients that
have no inlay hints of their own (lsp-mode 8.0, eglot 1.9). Redrawn after a save or revert, when
a job finishes and when the daemon asks (`workspace/inlayHint/refresh' in eglot; lsp-mode: its
lens refresh, with `lsp-lens-enable')."
  :lighter nil
  (kernelscope--hints-clear)
  (if kernelscope-hints-mode
      (progn
        (add-hook 'after-save-hook #'kernelscope--hints-schedule nil t)
        (add-hook 'after-revert-hook #'kernelscope--hints-schedule nil t)
        (kernelscope--hints-schedule))
    (remove-hook 'after-save-hook #'kernelscope--hints-schedule t)
    (remove-hook 'after-revert-hook #'kernelscope--hints-schedule t)))

(defun kernelscope--hints-on ()
  "In a buffer the daemon serves: inlay hints, by the client where it can, else drawn here."
  (when (and kernelscope-inlay-hints (kernelscope-root) (not (kernelscope-readme-p)))  ; kernel.py's
    (cond ((and (bound-and-true-p lsp-mode) (fboundp 'lsp-inlay-hints-mode))
           (setq-local lsp-inlay-hint-enable t)
           (lsp-inlay-hints-mode 1))
          ((and (bound-and-true-p eglot--managed-mode) (fboundp 'eglot-inlay-hints-mode))
           (eglot-inlay-hints-mode 1))
          (t (kernelscope-hints-mode 1)))))

(defun kernelscope--schedule-hints-of (buffers)
  (dolist (buffer buffers)
    (when (buffer-live-p buffer)
      (kernelscope--hints-schedule buffer))))

;;;; jobs

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
      (lsp-lens-refresh t buffer)))
  (kernelscope--schedule-hints-of (lsp--workspace-buffers workspace)))

(defun kernelscope--lsp-lens-refresh (workspace _params)
  "The daemon refreshes lenses and inlay hints together: what lsp-mode does, then the hints."
  (when (and (bound-and-true-p lsp-lens-enable) (fboundp 'lsp--lens-on-refresh))
    (lsp--lens-on-refresh workspace))
  (kernelscope--schedule-hints-of (lsp--workspace-buffers workspace))
  nil)

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

(defun kernelscope--reconnect-now ()
  "A reverted buffer lsp-mode served, in its mode again: served again (once)."
  (when kernelscope--reconnect
    (let ((lens (eq kernelscope--reconnect 'lens)))
      (setq kernelscope--reconnect nil)
      (unless (bound-and-true-p lsp-mode)
        (when lens
          (add-hook 'lsp-configure-hook #'kernelscope--lens-mode-on nil t))
        (lsp)))))

(defun kernelscope--after-major-mode ()
  ;; `normal-mode' passes through fundamental-mode first: wait for the real one, or for the
  ;; revert's end where fundamental-mode is the real one (a README without markdown-mode)
  (unless (eq major-mode 'fundamental-mode)
    (kernelscope--reconnect-now)))

(defun kernelscope--after-revert ()
  (kernelscope--reconnect-now))

(with-eval-after-load 'lsp-mode
  (add-to-list 'lsp-language-id-configuration '(python-mode . "python"))
  (add-to-list 'lsp-language-id-configuration '(python-ts-mode . "python"))  ; Emacs 29's
  ;; a workspace README in a mode lsp-mode names no language for (gfm-mode, fundamental-mode:
  ;; no markdown-mode autoloads): "markdown"; appended, so a mode that has one keeps it
  (let ((readme (cdr (assoc "readme" (cdr (assoc "workspaceRule" (kernelscope--vocabulary)))))))
    (when (stringp readme)
      (add-to-list 'lsp-language-id-configuration
                   (cons (concat "/" (regexp-quote readme) "\\'") "markdown") t)))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () kernelscope-command))
    :activation-fn (lambda (file-name _mode)  ; kernel.py (any Python file) and the README
                     (or (and (string-suffix-p ".py" file-name) (kernelscope-root file-name))
                         (kernelscope-readme-p file-name)))
    :initialization-options (lambda () kernelscope-initialization-options)
    :notification-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "kernelscope/jobFinished" #'kernelscope--lsp-job-finished handlers)
      handlers)
    :request-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "workspace/codeLens/refresh" #'kernelscope--lsp-lens-refresh handlers)
      handlers)
    :action-handlers  ; a clicked lens shows the daemon's answer
    (let ((handlers (make-hash-table :test #'equal)))
      (dolist (command '("kernelscope.showHistory" "kernelscope.compare"))
        (puthash command #'kernelscope--lsp-show-answer handlers))
      (dolist (command (kernelscope--command-names))  ; the restart lens: waits for the answer
        (when (kernelscope--confirms-p command)
          (puthash command #'kernelscope--lsp-run-lens handlers)))
      handlers)
    :after-open-fn #'kernelscope--hints-on
    :add-on? t
    :server-id 'kernelscope))
  (add-hook 'before-revert-hook #'kernelscope--before-revert)
  (add-hook 'after-change-major-mode-hook #'kernelscope--after-major-mode)
  (add-hook 'after-revert-hook #'kernelscope--after-revert))

;;;; eglot

;; eglot gives a project one server per major mode.  A workspace README joins the project's
;; kernelscope server (the one serving kernel.py), whatever the README's mode (markdown-mode,
;; gfm-mode, text-mode, fundamental-mode), without that server taking the mode: every other
;; markdown buffer, in the workspace or not, stays with your own markdown server (if any).
;; Only `M-x eglot' in the README starts the daemon; `eglot-ensure' there joins a running one.

(defvar eglot--cached-server)
(defvar eglot--managed-mode)
(defvar eglot--servers-by-project)
(declare-function eglot--current-project "eglot")
(declare-function eglot--project "eglot")
(declare-function eglot--maybe-activate-editing-mode "eglot")
(declare-function eglot--signal-textDocument/didClose "eglot")
(declare-function eglot--connect "eglot")
(declare-function eglot--guess-contact "eglot")

(defconst kernelscope--kernel-modes '(python-mode python-ts-mode)
  "The major modes whose `eglot-server-programs' entry is `kernelscope--eglot-contact'
\(python-ts-mode: Emacs 29's tree-sitter mode, which does not derive from python-mode).")

(defvar-local kernelscope--eglot-move nil
  "`M-x eglot' ran in this README while no kernelscope server ran: it moves to the one that
connects next in its project, leaving the server that managed it.")

(defun kernelscope--eglot-server-of-project ()
  "The live kernelscope eglot server of this buffer's project, or nil."
  (seq-find (lambda (server) (and (object-of-class-p server 'kernelscope-eglot-server)
                                  (jsonrpc-running-p server)))
            (gethash (eglot--current-project) eglot--servers-by-project)))

(defun kernelscope--eglot-move-to (server)
  "This README served by SERVER, in this buffer only: the server that managed it (your
markdown one) is told it closed and keeps its other buffers."
  (setq kernelscope--eglot-move nil)
  (unless (and eglot--managed-mode (eq eglot--cached-server server))
    (when eglot--managed-mode
      (eglot--signal-textDocument/didClose)
      (eglot--managed-mode -1))
    (setq eglot--cached-server server)
    (eglot--maybe-activate-editing-mode)))

(defun kernelscope--eglot-join ()
  "A workspace README opened (`find-file-hook', also at the end of `revert-buffer'), in any
major mode: the project's kernelscope server, if one runs, is its server."
  (when (and (featurep 'eglot) buffer-file-name (not eglot--managed-mode) (kernelscope-readme-p))
    (let ((server (kernelscope--eglot-server-of-project)))
      (when server
        (kernelscope--eglot-move-to server)))))

(defun kernelscope--eglot-join-after-mode ()
  "A major mode set in a workspace README (run before eglot's own hook): joined, except in
`normal-mode''s passing fundamental-mode step (the real mode follows; a README that stays in
fundamental-mode joins on `find-file-hook'), which eglot's own servers skip too: one didOpen."
  (unless (eq major-mode 'fundamental-mode)
    (kernelscope--eglot-join)))

(defun kernelscope--eglot-join-open-readmes (server)
  "A kernelscope SERVER connected: the workspace READMEs open in its project join it (one
your own server manages stays with it, unless `M-x eglot' ran there)."
  (when (object-of-class-p server 'kernelscope-eglot-server)
    (dolist (buffer (buffer-list))
      (with-current-buffer buffer
        (when (and buffer-file-name (or kernelscope--eglot-move (not eglot--managed-mode))
                   (kernelscope-readme-p)
                   (equal (eglot--current-project) (eglot--project server)))
          (kernelscope--eglot-move-to server))))))

(defun kernelscope--eglot-guess-readme (guess &optional interactive)
  "eglot's guess for a workspace README, asked interactively (`M-x eglot', `C-u' included): the
contact of kernel.py's modes (the kernelscope daemon, managing those modes).  Not for
`eglot-ensure' (non-interactive), which gets your markdown server: there a README only joins
a daemon that runs."
  (if (and interactive buffer-file-name (kernelscope-readme-p))
      (let ((major-mode (car kernelscope--kernel-modes)))
        (funcall guess interactive))
    (funcall guess interactive)))

(defun kernelscope--eglot-readme-command-p ()
  "Whether `M-x eglot' here is the README's: a workspace README the kernelscope daemon does
not serve yet, no prefix argument (with one, eglot asks which server, as anywhere)."
  (and (not current-prefix-arg) buffer-file-name (not (kernelscope--eglot-server))
       (kernelscope-readme-p)))

(defun kernelscope--eglot-serve-readme ()
  "This README served by the project's kernelscope daemon: joined if it runs, else started
\(as in kernel.py, managing python-mode), the README moving to it once it connects."
  (let ((server (kernelscope--eglot-server-of-project)))
    (if server
        (kernelscope--eglot-move-to server)
      (setq kernelscope--eglot-move t)
      (apply #'eglot--connect (eglot--guess-contact t)))))

(defun kernelscope--eglot-command (eglot &rest args)
  "`M-x eglot' in a workspace README: `kernelscope--eglot-serve-readme'.  eglot's own would
offer to shut down the server managing the README (your markdown server, for the whole
project) and start a second daemon beside the running one (every save benchmarked twice)."
  (interactive (lambda (spec)
                 (if (kernelscope--eglot-readme-command-p)
                     (list 'kernelscope-readme)
                   (advice-eval-interactive-spec spec))))
  (if (equal args '(kernelscope-readme))
      (kernelscope--eglot-serve-readme)
    (apply eglot args)))

(defun kernelscope--eglot-managed ()
  (if (and (bound-and-true-p eglot--managed-mode) (kernelscope--eglot-server))
      (kernelscope--hints-on)
    (when (bound-and-true-p kernelscope-hints-mode)
      (kernelscope-hints-mode -1))))

(defun kernelscope--eglot-contact (&optional interactive &rest more)
  "eglot's contact for a Python buffer: the kernelscope daemon inside an optimization
workspace; anywhere else the next `eglot-server-programs' entry for the buffer's mode (the
user's pylsp or pyright), so that loading kernelscope.el takes no other Python project."
  (if (kernelscope-root)
      (cons 'kernelscope-eglot-server
            (append kernelscope-command
                    (list :initializationOptions kernelscope-initialization-options)))
    (let* ((eglot-server-programs
            (seq-remove (lambda (entry) (eq (cdr-safe entry) 'kernelscope--eglot-contact))
                        eglot-server-programs))
           (found (eglot--lookup-mode major-mode))
           ;; eglot 1.9: (MODES LANGUAGE-ID CONTACT); later: (((MODE . LANGUAGE-ID)...) . CONTACT)
           (contact (if (consp (car-safe (car-safe found))) (cdr found) (nth 2 found))))
      (if (functionp contact) (apply contact interactive more) contact))))

(with-eval-after-load 'eglot
  (defclass kernelscope-eglot-server (eglot-lsp-server) ()
    :documentation "The kernelscope daemon: asks to redraw the inlay hints kernelscope.el draws.")
  (add-to-list 'eglot-server-programs (cons kernelscope--kernel-modes #'kernelscope--eglot-contact))
  (advice-add 'eglot--guess-contact :around #'kernelscope--eglot-guess-readme)
  (advice-add 'eglot :around #'kernelscope--eglot-command)
  ;; before eglot's own hooks (depth 0), which would manage the buffer by its mode
  (add-hook 'find-file-hook #'kernelscope--eglot-join -50)
  (add-hook 'after-change-major-mode-hook #'kernelscope--eglot-join-after-mode -50)
  (add-hook 'eglot-connect-hook #'kernelscope--eglot-join-open-readmes)
  (cl-defmethod eglot-client-capabilities ((_server kernelscope-eglot-server))
    (let ((capabilities (cl-call-next-method)))
      (unless (fboundp 'eglot-inlay-hints-mode)  ; where eglot draws them, it says what it supports
        (plist-put (plist-get capabilities :workspace) :inlayHint (list :refreshSupport t)))
      capabilities))
  (cl-defmethod eglot-handle-request
    (server (_method (eql workspace/inlayHint/refresh)) &rest _)
    (kernelscope--schedule-hints-of (eglot--managed-buffers server))
    nil)
  (cl-defmethod eglot-handle-notification
    (server (_method (eql kernelscope/jobFinished)) &rest params)
    (kernelscope--job-finished params)
    (kernelscope--schedule-hints-of (eglot--managed-buffers server)))
  (add-hook 'eglot-managed-mode-hook #'kernelscope--eglot-managed))

(provide 'kernelscope)
;;; kernelscope.el ends here
