-- kernelscope for Neovim (0.7 through 0.11+): starts `kernelscope serve` for Python buffers
-- inside an optimization workspace (a folder holding kernel.py and memory/) and for the
-- workspace's README.md (the server's warnings on its stop conditions), shows its code
-- lenses and inlay hints, refreshes them on the right events and when the server asks, keeps a
-- buffer attached when it is reloaded (`:edit!`, `:checktime`), and adds a user command for
-- every daemon command (`:KernelscopeCompare v0 v4` opens a scratch buffer). All logic lives
-- in the server; this file only wires it in.
--
-- Version differences are feature-detected, never guessed, so that no supported version
-- reports a deprecated call: `vim.lsp.start` (0.8+) else `vim.lsp.start_client`,
-- `vim.lsp.get_clients` (0.10+) else `vim.lsp.get_active_clients`, client methods called
-- as `client:request(...)` where the client is an object with methods (0.11+), else as the
-- closures `client.request(...)` older versions have, and inlay hints drawn by Neovim where it
-- has `vim.lsp.inlay_hint` (0.10+), else by this file as end-of-line virtual text.
local M = {}

M.config = {
  cmd = { "kernelscope", "serve" },
  -- prints the server's vocabulary when the plugin runs outside the repository; nil: derived
  -- from `cmd` ({..., "serve"} -> {..., "schema", "--commands"}; {python, "-m",
  -- "kernelscope.daemon.lsp"} -> {python, "-m", "kernelscope.daemon.cli.main", "schema", "--commands"})
  schema_cmd = nil,
  init_options = { kernelscope = {} }, -- e.g. { kernelscope = { dbUrl = "..." } }; trust: config.toml's `trusted`
  refresh_events = { "BufEnter", "BufWritePost", "CursorHold", "InsertLeave" },
  on_result = nil, -- function(command, result): defaults to a notification / scratch buffer
  capabilities = nil, -- extra client capabilities, merged over Neovim's own
  inlay_hints = true, -- show the server's inlay hints (values already tried, kernel summaries)
}

local NAME = "kernelscope"
-- where this file draws inlay hints on Neovim without `vim.lsp.inlay_hint` (before 0.10)
local HINTS = vim.api.nvim_create_namespace("kernelscope.inlayhint")
M.hint_namespace = HINTS

-- The server's rule for "this folder is an optimization workspace", read as data (never copied):
-- editor-clients/commands.json's `workspaceRule` when the plugin runs from the repository,
-- else what `kernelscope schema --commands` prints (once per session). Used only to know where
-- to start the server; commands then ask it (`kernelscope/workspaces`).
local VOCABULARY = debug.getinfo(1, "S").source:sub(2):gsub("[^/]*$", "") .. "../../../commands.json"
local vocabulary_cache

--- The command that prints the vocabulary: `schema_cmd`, else derived from `cmd` (nil if it
--- cannot be: neither `serve` nor `-m kernelscope...` in it).
function M.schema_cmd()
  if M.config.schema_cmd then
    return M.config.schema_cmd
  end
  local cmd = M.config.cmd or {}
  for i, word in ipairs(cmd) do
    if word == "serve" then
      local derived = vim.list_slice(cmd, 1, i - 1)
      vim.list_extend(derived, { "schema", "--commands" })
      return derived
    end
    if word == "-m" and type(cmd[i + 1]) == "string" and cmd[i + 1]:match("^kernelscope") then
      local derived = vim.list_slice(cmd, 1, i - 1)
      vim.list_extend(derived, { "-m", "kernelscope.daemon.cli.main", "schema", "--commands" })
      return derived
    end
  end
  return nil
end

local function vocabulary()
  if vocabulary_cache == nil then
    local text, problem
    if vim.fn.filereadable(VOCABULARY) == 1 then
      text = table.concat(vim.fn.readfile(VOCABULARY), "\n")
    else
      local schema = M.schema_cmd()
      if not schema then
        problem = "cannot tell from cmd " .. vim.inspect(M.config.cmd) .. " how to run `kernelscope schema --commands`"
      elseif vim.fn.executable(schema[1]) ~= 1 then
        problem = vim.inspect(schema) .. ": " .. tostring(schema[1]) .. " is not executable"
      else
        text = vim.fn.system(schema)
        if vim.v.shell_error ~= 0 then
          problem = vim.inspect(schema) .. " failed (status " .. vim.v.shell_error .. "): " .. text:sub(1, 300)
          text = nil
        end
      end
    end
    local ok, decoded = pcall(vim.fn.json_decode, text or "")
    vocabulary_cache = (ok and type(decoded) == "table") and decoded or false
    if not vocabulary_cache then
      vim.notify(
        "kernelscope: cannot read the server's workspace rule, so no buffer is attached: "
          .. (problem or "its output is not JSON")
          .. ". Set schema_cmd (or cmd) in require('kernelscope').setup{...}",
        vim.log.levels.WARN
      )
    end
  end
  return vocabulary_cache or nil
end
M.vocabulary = vocabulary

local function is_workspace(dir)
  local rule = (vocabulary() or {}).workspaceRule
  if type(rule) ~= "table" then
    return false
  end
  for _, name in ipairs(rule.files or {}) do
    if vim.fn.filereadable(dir .. "/" .. name) ~= 1 then
      return false
    end
  end
  for _, name in ipairs(rule.dirs or {}) do
    if vim.fn.isdirectory(dir .. "/" .. name) == 1 then
      return true
    end
  end
  local readme = dir .. "/" .. (rule.readme or "README.md")
  if rule.fence and vim.fn.filereadable(readme) == 1 then
    for _, line in ipairs(vim.fn.readfile(readme)) do
      local tag = line:match("^%s*```+%s*(%S+)%s*$") or line:match("^%s*~~~+%s*(%S+)%s*$")
      if tag == rule.fence then
        return true
      end
    end
  end
  return false
end

--- The README name of the server's rule (`workspaceRule.readme`), "README.md" until it is read.
local function readme_name()
  local rule = (vocabulary() or {}).workspaceRule
  return type(rule) == "table" and rule.readme or "README.md"
end

--- The workspace a buffer named `path` is served in: a Python file's (its folder or one above),
--- a workspace's own README (its folder, when that is a workspace: the server publishes its
--- warnings), else nil.
function M.served_root(path)
  if path:match("%.py$") then
    return M.find_root(path)
  end
  if vim.fn.fnamemodify(path, ":t") == readme_name() then
    local dir = vim.fn.fnamemodify(path, ":p:h")
    return is_workspace(dir) and dir or nil
  end
  return nil
end

--- The optimization workspace holding `path`, or nil.
function M.find_root(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while dir and dir ~= "" do
    if is_workspace(dir) then
      return dir
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return nil
end

-- `client:name(...)` on 0.11+ (clients are objects whose class holds the methods; the
-- closures are deprecated there), `client.name(...)` before.
local function call(client, name, ...)
  local meta = getmetatable(client)
  if meta and type(meta.__index) == "table" and type(meta.__index[name]) == "function" then
    return client[name](client, ...)
  end
  return client[name](...)
end
M.call = call -- for scripts and tests that talk to the client the same way

local function all_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = NAME })
  end
  return vim.lsp.get_active_clients()
end

--- The running kernelscope client of the workspace `root`, or nil.
function M.client(root)
  for _, client in pairs(all_clients()) do
    if client.name == NAME and client.config.root_dir == root and not call(client, "is_stopped") then
      return client
    end
  end
  return nil
end

--- The kernelscope client attached to buffer `bufnr`, or nil.
function M.buf_client(bufnr)
  for _, client in pairs(all_clients()) do
    if client.name == NAME and client.attached_buffers and client.attached_buffers[bufnr] then
      return client
    end
  end
  return nil
end

-- Neovim's own inlay hints, where it has them: `vim.lsp.inlay_hint.enable(enable, filter)`
-- from the 0.10 release on (0.10's pre-releases took `enable(bufnr, enable)`, which the release
-- and 0.11 reject with a deprecation error: never call that form). nil before 0.10.
local function builtin_hints()
  local inlay_hint = vim.lsp.inlay_hint
  local released = vim.fn.has("nvim-0.10") == 1
  if released and type(inlay_hint) == "table" and type(inlay_hint.enable) == "function" then
    return inlay_hint
  end
  return nil
end

local function enable_builtin_hints(bufnr)
  local inlay_hint = builtin_hints()
  if M.config.inlay_hints and inlay_hint and vim.api.nvim_buf_is_loaded(bufnr) then
    inlay_hint.enable(true, { bufnr = bufnr })
  end
end

local function label_text(label)
  if type(label) == "string" then
    return label
  end
  local parts = {}
  for _, part in ipairs(type(label) == "table" and label or {}) do
    table.insert(parts, part.value or "")
  end
  return table.concat(parts)
end

-- Before 0.10: every hint of a line as virtual text at its end (inline virtual text is 0.10+).
local function draw_hints(bufnr, hints)
  vim.api.nvim_buf_clear_namespace(bufnr, HINTS, 0, -1)
  local lines, count = {}, vim.api.nvim_buf_line_count(bufnr)
  for _, hint in ipairs(type(hints) == "table" and hints or {}) do
    local line = hint.position and hint.position.line
    if type(line) == "number" and line >= 0 and line < count then
      lines[line] = lines[line] or {}
      table.insert(lines[line], hint)
    end
  end
  for line, items in pairs(lines) do
    table.sort(items, function(a, b)
      return a.position.character < b.position.character
    end)
    local chunks = {}
    for _, hint in ipairs(items) do
      table.insert(chunks, { " " })
      table.insert(chunks, { label_text(hint.label), "Comment" })
    end
    vim.api.nvim_buf_set_extmark(bufnr, HINTS, line, 0, {
      virt_text = chunks,
      virt_text_pos = "eol",
      hl_mode = "combine",
    })
  end
end

-- Before 0.10: ask this client for the whole buffer's inlay hints and draw them. An answer for
-- text that has changed since is dropped (the next refresh event asks again).
local function refresh_hints(client, bufnr)
  if not M.config.inlay_hints or builtin_hints() then
    return
  end
  local capabilities = client.server_capabilities
  if not (capabilities and capabilities.inlayHintProvider) then
    return
  end
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = 0, character = 0 },
      ["end"] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 },
    },
  }
  call(client, "request", "textDocument/inlayHint", params, function(err, result)
    if err or not vim.api.nvim_buf_is_loaded(bufnr) or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return
    end
    draw_hints(bufnr, result)
  end, bufnr)
end

-- Ask this client (not every client of the buffer) for the buffer's lenses (Neovim draws
-- them) and, before 0.10, its inlay hints (Neovim asks for and draws its own from 0.10 on).
-- `only`: "lenses" or "hints" (a refresh the server asked for), else both.
local function refresh_buffer(client, bufnr, only)
  if not (client and client.initialized and vim.api.nvim_buf_is_loaded(bufnr)) then
    return
  end
  if not (client.attached_buffers and client.attached_buffers[bufnr]) then
    return
  end
  if only ~= "lenses" then
    refresh_hints(client, bufnr)
  end
  if only == "hints" then
    return
  end
  local on_codelens = vim.lsp.codelens.on_codelens
  if not on_codelens then
    return pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  call(client, "request", "textDocument/codeLens", params, on_codelens, bufnr)
end

local function refresh_client(client, only)
  for bufnr in pairs(client and client.attached_buffers or {}) do
    refresh_buffer(client, bufnr, only)
  end
end

--- `text` in the scratch buffer called `name` (a new split, or the window already showing
--- it): not a file (buftype=nofile), gone once hidden (bufhidden=wipe), read-only. Returns it.
function M.scratch(name, text, filetype)
  local buf
  for _, candidate in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(candidate) == name then
      buf = candidate
    end
  end
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n"))
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = filetype or "markdown"
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("split")
    vim.api.nvim_win_set_buf(0, buf)
  end
  return buf
end

-- The scratch buffer's name for a command's markdown: kernelscope://compare/v0..v4 for a
-- comparison, kernelscope://showHistory for the others (one per command, reused).
local function result_name(command, result, args)
  if command == "kernelscope.compare" then
    args = type(args) == "table" and args or {}
    local a = args.versionA or (type(result.a) == "table" and result.a.version) or "?"
    local b = args.versionB or (type(result.b) == "table" and result.b.version) or "?"
    return "kernelscope://compare/" .. a .. ".." .. b
  end
  return "kernelscope://" .. (command:gsub("^kernelscope%.", ""))
end

-- A command's result: to `config.on_result` when set; markdown in a scratch buffer; else a
-- notification. `args` is the command's parameter object as sent.
local function show(command, result, args)
  if M.config.on_result then
    return M.config.on_result(command, result)
  end
  if type(result) == "table" and type(result.markdown) == "string" then
    M.scratch(result_name(command, result, args), result.markdown, "markdown")
  else
    vim.notify(command .. ": " .. vim.inspect(result), vim.log.levels.INFO)
  end
end

-- Send a daemon command with its arguments as given; show the result, redraw the lenses.
local function run(client, command, arguments, bufnr)
  local params = { command = command, arguments = arguments }
  call(client, "request", "workspace/executeCommand", params, function(err, result)
    if err then
      vim.notify("kernelscope: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    else
      show(command, result, type(arguments) == "table" and arguments[1] or nil)
    end
    refresh_buffer(client, bufnr)
  end, bufnr)
end

local handlers = {
  ["workspace/codeLens/refresh"] = function(_, _, ctx)
    vim.schedule(function()
      refresh_client(vim.lsp.get_client_by_id(ctx.client_id), "lenses")
    end)
    return vim.NIL
  end,
  -- the server's hints changed (a save, a new version): Neovim's own handler from 0.10 on
  ["workspace/inlayHint/refresh"] = function(err, result, ctx, config)
    local builtin = builtin_hints() and vim.lsp.handlers["workspace/inlayHint/refresh"]
    if builtin then
      return builtin(err, result, ctx, config)
    end
    vim.schedule(function()
      refresh_client(vim.lsp.get_client_by_id(ctx.client_id), "hints")
    end)
    return vim.NIL
  end,
  ["kernelscope/jobFinished"] = function(_, params, ctx)
    vim.schedule(function()
      local kind = params and params.kind or "job"
      local outcome = params and (params.error or (params.cancelled and "cancelled") or "done") or "done"
      if not (params and params.background) then -- background probes: lenses and diagnostics only
        vim.notify("kernelscope " .. kind .. ": " .. outcome, vim.log.levels.INFO)
      end
      refresh_client(vim.lsp.get_client_by_id(ctx.client_id))
    end)
  end,
}

-- `kernelscope.maskHalf` -> `KernelscopeMaskHalf`
local function user_command_name(command)
  local name = command:match("^kernelscope%.(.+)$")
  return name and ("Kernelscope" .. name:sub(1, 1):upper() .. name:sub(2)) or nil
end

-- The daemon's commands, never copied by hand: editor-clients/commands.json (generated by
-- `kernelscope schema --commands`) when the plugin runs from the repository, and in any case
-- what the server offers (`executeCommandProvider`), added when a client attaches.
M.commands = {}
-- commands that mask memory (commands.json's `confirm`): their user commands send
-- `confirm = true`, so the server asks first (window/showMessageRequest: Neovim's own handler,
-- `inputlist` before 0.10, `vim.ui.select` after) and writes nothing unless the answer is yes
M.confirms = {}
M.workspaces_request = "kernelscope/workspaces"
local function load_commands()
  local decoded = vocabulary()
  if type(decoded) == "table" and type(decoded.commands) == "table" then
    if type(decoded.requests) == "table" and decoded.requests.workspaces then
      M.workspaces_request = decoded.requests.workspaces
    end
    for command, entry in pairs(decoded.commands) do
      local name = user_command_name(command)
      if name then
        M.commands[name] = command
      end
      M.confirms[command] = type(entry) == "table" and entry.confirm == true or nil
    end
  end
end
if vim.fn.filereadable(VOCABULARY) == 1 then
  load_commands() -- at load (from the repository); else at setup, once the command is known
end

-- User commands that also take their parameters positionally: `:KernelscopeCompare v0 v4`
-- (versions, completed from the workspace's memory/v*.json).
M.positional = {
  KernelscopeCompare = { "versionA", "versionB" },
}

-- A lens runs its command with the arguments the server put in it (the workspace included).
local function lens_commands()
  local commands = {}
  for _, command in pairs(M.commands) do
    commands[command] = function(lens_command, ctx)
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client then
        run(client, lens_command.command, lens_command.arguments, ctx.bufnr)
      end
    end
  end
  return commands
end

local function client_config(root)
  local ours = { workspace = { codeLens = { refreshSupport = true } } }
  if M.config.inlay_hints then
    -- the handler above serves the server's inlay hint refreshes (Neovim says so from 0.10 on)
    ours.workspace.inlayHint = { refreshSupport = true }
    if not builtin_hints() then -- this file asks for them before 0.10
      ours.textDocument = { inlayHint = { dynamicRegistration = false } }
    end
  end
  local capabilities = vim.tbl_deep_extend(
    "force",
    vim.lsp.protocol.make_client_capabilities(),
    -- the handlers above serve the server's refreshes: say so (Neovim does not for lenses)
    ours,
    M.config.capabilities or {}
  )
  return {
    name = NAME,
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = M.config.init_options,
    capabilities = capabilities,
    handlers = handlers,
    commands = lens_commands(),
    on_attach = function(client, bufnr)
      M.adopt_server_commands(client)
      enable_builtin_hints(bufnr)
      vim.schedule(function()
        refresh_buffer(client, bufnr)
      end)
    end,
    on_exit = function()
      -- the hints this file drew (before 0.10) go with the server that gave them
      vim.schedule(function()
        for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(bufnr) and not M.buf_client(bufnr) then
            vim.api.nvim_buf_clear_namespace(bufnr, HINTS, 0, -1)
          end
        end
      end)
    end,
  }
end

local function same_workspace(client, config)
  return client.name == NAME and client.config.root_dir == config.root_dir and not call(client, "is_stopped")
end

--- Attach the server to `bufnr` when it is a Python file inside a workspace or a workspace's
--- README (M.served_root): the running client of that workspace (started if there is none).
--- Safe to call again, e.g. after a reload detached the buffer. Returns the client id.
function M.attach(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or not vim.api.nvim_buf_is_loaded(bufnr) then
    return nil
  end
  local root = M.served_root(name)
  if not root then
    return nil
  end
  local id
  if vim.lsp.start then
    -- 0.8 and 0.9 attach the current buffer: make it `bufnr`
    id = vim.api.nvim_buf_call(bufnr, function()
      return vim.lsp.start(client_config(root), { bufnr = bufnr, reuse_client = same_workspace })
    end)
  else
    local client = M.client(root)
    id = client and client.id or vim.lsp.start_client(client_config(root))
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
  if id then
    -- a reloaded buffer that stayed attached (`:checktime`) has lost its lenses' places
    vim.schedule(function()
      refresh_buffer(vim.lsp.get_client_by_id(id), bufnr)
    end)
  end
  return id
end

--- The workspace of buffer `bufnr` as the server sees them (`kernelscope/workspaces`: the
--- innermost one holding the file), or nil when it names none.
function M.server_workspace(client, bufnr)
  local ok, answer = pcall(call, client, "request_sync", M.workspaces_request, {}, 3000, bufnr)
  local result = ok and answer and answer.result
  local file = vim.fn.resolve(vim.api.nvim_buf_get_name(bufnr))
  local best
  for _, found in ipairs(result and result.workspaces or {}) do
    local root = found.workspace
    if (file == root or file:sub(1, #root + 1) == root .. "/") and (best == nil or #root > #best) then
      best = root
    end
  end
  return best
end

--- Run a daemon command with one parameter object; the result goes to `callback` or `show`.
function M.execute(command, params, callback)
  local bufnr = vim.api.nvim_get_current_buf()
  local root = M.find_root(vim.api.nvim_buf_get_name(bufnr))
  if not root then
    vim.notify("kernelscope: this buffer is not inside an optimization workspace", vim.log.levels.WARN)
    return
  end
  local client = M.client(root)
  if not client then
    vim.notify("kernelscope: the server is not running", vim.log.levels.WARN)
    return
  end
  local args = vim.tbl_extend("force", { workspace = M.server_workspace(client, bufnr) or root }, params or {})
  if not callback then
    return run(client, command, { args }, bufnr)
  end
  call(client, "request", "workspace/executeCommand", { command = command, arguments = { args } }, function(err, result)
    if err then
      vim.notify("kernelscope: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    else
      callback(result)
    end
  end, bufnr)
end

local function json_args(opts)
  if opts.args == nil or opts.args == "" then
    return {}
  end
  local ok, decoded = pcall(vim.fn.json_decode, opts.args)
  if not ok or type(decoded) ~= "table" then
    vim.notify("kernelscope: arguments must be a JSON object", vim.log.levels.ERROR)
    return nil
  end
  return decoded
end

-- A user command's parameter object: a JSON object, or (M.positional) its parameters in order.
local function command_args(name, opts)
  local names = M.positional[name]
  if not names or vim.trim(opts.args or ""):sub(1, 1) == "{" then
    return json_args(opts)
  end
  local given = opts.fargs or {}
  if #given ~= #names then
    vim.notify(
      ("kernelscope: :%s takes %d arguments (%s) or a JSON object, got %d"):format(
        name,
        #names,
        table.concat(names, " "),
        #given
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  local params = {}
  for i, key in ipairs(names) do
    params[key] = given[i]
  end
  return params
end

-- `:KernelscopeCompare <Tab>`: the workspace's recorded versions (memory/v*.json).
local function complete_versions(lead)
  local root = M.find_root(vim.api.nvim_buf_get_name(0))
  if not root then
    return {}
  end
  local versions = {}
  for _, path in ipairs(vim.fn.glob(root .. "/memory/v*.json", false, true)) do
    local version = vim.fn.fnamemodify(path, ":t:r")
    if version:sub(1, #lead) == lead then
      table.insert(versions, version)
    end
  end
  table.sort(versions, function(a, b)
    return (tonumber(a:sub(2)) or 0) < (tonumber(b:sub(2)) or 0)
  end)
  return versions
end

--- `:Kernelscope<Name>` for the daemon command `command`.
function M.define_command(name, command)
  M.commands[name] = command
  local options = { nargs = "?", desc = command .. " (optional JSON object of parameters)" }
  if M.positional[name] then
    options = {
      nargs = "*",
      desc = command .. " (" .. table.concat(M.positional[name], " ") .. ", or a JSON object)",
      complete = complete_versions,
    }
  end
  vim.api.nvim_create_user_command(name, function(o)
    local params = command_args(name, o)
    if params then
      if M.confirms[command] and params.confirm == nil then
        params.confirm = true -- typed by a person: the server asks before it masks
      end
      M.execute(command, params)
    end
  end, options)
end

--- Draw the server's warnings on a memory record just opened (`bufnr`): one published while
--- no buffer showed the file (a record that cannot be read) is kept by Neovim on an unloaded
--- buffer, and `vim.diagnostic.set` draws only on loaded ones, so nothing draws it on `:edit`
--- (0.7 and 0.11 alike) until the next publication.
function M.show_record_warnings(bufnr)
  local root = M.find_root(vim.api.nvim_buf_get_name(bufnr))
  local client = root and M.client(root)
  if client then
    vim.diagnostic.show(vim.lsp.diagnostic.get_namespace(client.id), bufnr)
  end
end

--- The commands the attached server offers: a user command and a lens handler for each (a
--- daemon newer than commands.json brings its own).
function M.adopt_server_commands(client)
  local provider = client.server_capabilities and client.server_capabilities.executeCommandProvider
  for _, command in ipairs(provider and provider.commands or {}) do
    local name = user_command_name(command)
    if name and not M.commands[name] then
      M.define_command(name, command)
    end
    if client.commands and not client.commands[command] then
      client.commands[command] = function(lens_command, ctx)
        run(client, lens_command.command, lens_command.arguments, ctx.bufnr)
      end
    end
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  if vocabulary_cache == false then -- read again with the new settings
    vocabulary_cache = nil
  end
  if next(M.commands) == nil then
    load_commands()
  end
  local group = vim.api.nvim_create_augroup("kernelscope", { clear = true })
  -- BufReadPost also follows every reload (`:edit!`, `:checktime`): a reload that detached
  -- the buffer attaches it again.
  -- A workspace's README.md too: the server publishes its warnings (a stop condition it cannot
  -- check, a placeholder left in) while it is open.
  local served = { "*.py", readme_name() }
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = served,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufReadPost", {
    group = group,
    pattern = "*/memory/*.json",
    callback = function(args)
      M.show_record_warnings(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd(M.config.refresh_events, {
    group = group,
    pattern = "*.py", -- the README has no lenses or hints: its warnings come by themselves
    callback = function(args)
      refresh_buffer(M.buf_client(args.buf), args.buf)
    end,
  })
  for name, command in pairs(M.commands) do
    M.define_command(name, command)
  end
  -- buffers opened before setup (a plugin manager that loads on `ft = "python"`)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      M.attach(bufnr)
    end
  end
end

return M
