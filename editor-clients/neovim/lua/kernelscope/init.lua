-- kernelscope for Neovim (>= 0.7): starts `kernelscope serve` for Python buffers inside an
-- optimization workspace (a folder holding kernel.py and memory/), shows its code lenses,
-- refreshes them on the right events and when the server asks, and adds a user command
-- for every daemon command. All logic lives in the server; this file only wires it in.
local M = {}

M.config = {
  cmd = { "kernelscope", "serve" },
  init_options = { kernelscope = {} }, -- e.g. { kernelscope = { trusted = true, dbUrl = "..." } }
  refresh_events = { "BufEnter", "BufWritePost", "CursorHold", "InsertLeave" },
  on_result = nil, -- function(command, result): defaults to a notification / scratch buffer
}
M.clients = {} -- workspace root -> client id

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

local function refresh_lenses()
  pcall(vim.lsp.codelens.refresh)
end

local function show(command, result)
  if M.config.on_result then
    return M.config.on_result(command, result)
  end
  if type(result) == "table" and result.markdown then
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result.markdown, "\n"))
    vim.api.nvim_buf_set_option(buf, "filetype", "markdown")
    vim.cmd("split")
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.notify(command .. ": " .. vim.inspect(result), vim.log.levels.INFO)
  end
end

local handlers = {
  ["workspace/codeLens/refresh"] = function()
    vim.schedule(refresh_lenses)
    return vim.NIL
  end,
  ["kernelscope/jobFinished"] = function(_, params)
    vim.schedule(function()
      local kind = params and params.kind or "job"
      local outcome = params and (params.error or (params.cancelled and "cancelled") or "done") or "done"
      if not (params and params.background) then -- background probes: lenses and diagnostics only
        vim.notify("kernelscope " .. kind .. ": " .. outcome, vim.log.levels.INFO)
      end
      refresh_lenses()
    end)
  end,
}

local function start(root)
  if M.clients[root] then
    return M.clients[root]
  end
  local id = vim.lsp.start_client({
    name = "kernelscope",
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = M.config.init_options,
    handlers = handlers,
  })
  M.clients[root] = id
  return id
end

--- Attach the server to `bufnr` when it is a Python file inside a workspace.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return nil
  end
  local root = M.find_root(name)
  if not root then
    return nil
  end
  local id = start(root)
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
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
  local client = vim.lsp.get_client_by_id(M.clients[root] or -1)
  if not client then
    vim.notify("kernelscope: the server is not running", vim.log.levels.WARN)
    return
  end
  local args = vim.tbl_extend("force", { workspace = root }, params or {})
  client.request("workspace/executeCommand", { command = command, arguments = { args } }, function(err, result)
    if err then
      vim.notify("kernelscope: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if callback then
      callback(result)
    else
      show(command, result)
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

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", M.config, opts or {})
  local group = vim.api.nvim_create_augroup("kernelscope", { clear = true })
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
      if vim.lsp.buf_is_attached and next(vim.lsp.buf_get_clients(args.buf)) ~= nil then
        refresh_lenses()
      end
    end,
  })
  -- Lenses carry daemon commands: run them through M.execute so their results are shown.
  for _, command in pairs(M.commands) do
    vim.lsp.commands[command] = function(lens_command)
      local params = (lens_command.arguments or {})[1] or {}
      params.workspace = nil -- M.execute fills in the buffer's workspace
      M.execute(lens_command.command, params)
    end
  end
  for name, command in pairs(M.commands) do
    vim.api.nvim_create_user_command(name, function(o)
      local params = json_args(o)
      if params then
        M.execute(command, params)
      end
    end, { nargs = "?", desc = command .. " (optional JSON object of parameters)" })
  end
end

return M
