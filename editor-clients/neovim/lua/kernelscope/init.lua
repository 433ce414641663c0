-- kernelscope for Neovim (0.7 through 0.11+): starts `kernelscope serve` for Python buffers
-- inside an optimization workspace (a folder holding kernel.py and memory/), shows its code
-- lenses, refreshes them on the right events and when the server asks, keeps a buffer attached
-- when it is reloaded (`:edit!`, `:checktime`), and adds a user command for every daemon
-- command. All logic lives in the server; this file only wires it in.
--
-- Version differences are feature-detected, never guessed, so that no supported version
-- reports a deprecated call: `vim.lsp.start` (0.8+) else `vim.lsp.start_client`,
-- `vim.lsp.get_clients` (0.10+) else `vim.lsp.get_active_clients`, and client methods called
-- as `client:request(...)` where the client is an object with methods (0.11+), else as the
-- closures `client.request(...)` older versions have.
local M = {}

M.config = {
  cmd = { "kernelscope", "serve" },
  init_options = { kernelscope = {} }, -- e.g. { kernelscope = { trusted = true, dbUrl = "..." } }
  refresh_events = { "BufEnter", "BufWritePost", "CursorHold", "InsertLeave" },
  on_result = nil, -- function(command, result): defaults to a notification / scratch buffer
  capabilities = nil, -- extra client capabilities, merged over Neovim's own
}

local NAME = "kernelscope"

local function is_workspace(dir)
  return vim.fn.filereadable(dir .. "/kernel.py") == 1 and vim.fn.isdirectory(dir .. "/memory") == 1
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

-- Ask this client (not every client of the buffer) for the buffer's lenses; Neovim draws them.
local function refresh_buffer(client, bufnr)
  if not (client and client.initialized and vim.api.nvim_buf_is_loaded(bufnr)) then
    return
  end
  if not (client.attached_buffers and client.attached_buffers[bufnr]) then
    return
  end
  local on_codelens = vim.lsp.codelens.on_codelens
  if not on_codelens then
    return pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  call(client, "request", "textDocument/codeLens", params, on_codelens, bufnr)
end

local function refresh_client(client)
  for bufnr in pairs(client and client.attached_buffers or {}) do
    refresh_buffer(client, bufnr)
  end
end

local function show(command, result)
  if M.config.on_result then
    return M.config.on_result(command, result)
  end
  if type(result) == "table" and result.markdown then
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result.markdown, "\n"))
    vim.bo[buf].filetype = "markdown"
    vim.cmd("split")
    vim.api.nvim_win_set_buf(0, buf)
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
      show(command, result)
    end
    refresh_buffer(client, bufnr)
  end, bufnr)
end

local handlers = {
  ["workspace/codeLens/refresh"] = function(_, _, ctx)
    vim.schedule(function()
      refresh_client(vim.lsp.get_client_by_id(ctx.client_id))
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

M.commands = {
  KernelscopeMaskHalf = "kernelscope.maskHalf",
  KernelscopeUnmask = "kernelscope.unmask",
  KernelscopeRecordExperiment = "kernelscope.recordExperiment",
  KernelscopeRunIteration = "kernelscope.runIteration",
  KernelscopeRestart = "kernelscope.restart",
  KernelscopeBenchmark = "kernelscope.benchmark",
  KernelscopeShowHistory = "kernelscope.showHistory",
  KernelscopeTopExperiments = "kernelscope.topExperiments",
  KernelscopeCancel = "kernelscope.cancel",
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
  local capabilities = vim.tbl_deep_extend(
    "force",
    vim.lsp.protocol.make_client_capabilities(),
    -- the handler above serves the server's lens refreshes: say so (Neovim does not)
    { workspace = { codeLens = { refreshSupport = true } } },
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
      vim.schedule(function()
        refresh_buffer(client, bufnr)
      end)
    end,
  }
end

local function same_workspace(client, config)
  return client.name == NAME and client.config.root_dir == config.root_dir and not call(client, "is_stopped")
end

--- Attach the server to `bufnr` when it is a Python file inside a workspace: the running
--- client of that workspace (started if there is none). Safe to call again, e.g. after a
--- reload detached the buffer. Returns the client id.
function M.attach(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or not vim.api.nvim_buf_is_loaded(bufnr) then
    return nil
  end
  local root = M.find_root(name)
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
  local args = vim.tbl_extend("force", { workspace = root }, params or {})
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

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  local group = vim.api.nvim_create_augroup("kernelscope", { clear = true })
  -- BufReadPost also follows every reload (`:edit!`, `:checktime`): a reload that detached
  -- the buffer attaches it again.
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.py",
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd(M.config.refresh_events, {
    group = group,
    pattern = "*.py",
    callback = function(args)
      refresh_buffer(M.buf_client(args.buf), args.buf)
    end,
  })
  for name, command in pairs(M.commands) do
    vim.api.nvim_create_user_command(name, function(o)
      local params = json_args(o)
      if params then
        M.execute(command, params)
      end
    end, { nargs = "?", desc = command .. " (optional JSON object of parameters)" })
  end
  -- Python buffers opened before setup (a plugin manager that loads on `ft = "python"`)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr):match("%.py$") then
      M.attach(bufnr)
    end
  end
end

return M
