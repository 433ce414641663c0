-- What the headless tests share: deprecated calls recorded before anything runs, reading a
-- file, and writing the findings (with the messages and the version) before quitting.
local H = {}

--- Record every vim.deprecate call (reported or not) in `results.deprecated`.
function H.watch_deprecations(results)
  if vim.deprecate then
    local deprecate = vim.deprecate
    vim.deprecate = function(name, ...)
      table.insert(results.deprecated, tostring(name))
      return deprecate(name, ...)
    end
  end
end

--- finish(code): write `results` (as JSON) to `out_path`, then quit with `code`.
function H.finisher(out_path, results)
  return function(code)
    results.messages = vim.fn.execute("messages")
    results.version = vim.version and tostring(vim.version().major .. "." .. vim.version().minor) or "?"
    local file = io.open(out_path, "w")
    file:write(vim.fn.json_encode(results))
    file:close()
    vim.cmd((code == 0 and "qall!" or "cquit!"))
  end
end

--- The kernelscope client attached to `bufnr` (the APIs of 0.7 and 0.10+), or nil. Asked of
--- Neovim, not of the plugin: the tests check the plugin's attachment, not its own lookup.
function H.client(bufnr)
  local attached = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr }) or vim.lsp.buf_get_clients(bufnr)
  for _, c in pairs(attached) do
    if c.name == "kernelscope" then
      return c
    end
  end
  return nil
end

--- The initialized kernelscope client of `bufnr`, waited for (30 s); `results.attached` says
--- whether one came.
function H.attached_client(bufnr, results)
  results.attached = vim.wait(30000, function()
    local c = H.client(bufnr)
    return c ~= nil and c.initialized == true
  end, 50)
  assert(results.attached, "the buffer never got an initialized kernelscope client")
  return H.client(bufnr)
end

--- Every `kernelscope/jobFinished` the client gets, appended to `list` (the plugin's handler
--- still runs).
function H.record_finished(c, list)
  local on_finished = c.handlers["kernelscope/jobFinished"]
  c.handlers["kernelscope/jobFinished"] = function(e, params, ctx, config)
    table.insert(list, params)
    return on_finished(e, params, ctx, config)
  end
end

--- After the test body ran under pcall: its error (if any) in `results`, then finish.
function H.conclude(ok, err, results, finish)
  if not ok then
    results.error = tostring(err)
    finish(1)
  else
    finish(0)
  end
end

--- The plugin from $KS_PLUGIN, set up to start $KS_CMD with the store $KS_DB and `settings`
--- (the other initializationOptions); each command's answer lands in `results.commands` when
--- the test keeps that table. Returns the plugin module.
function H.setup(results, settings)
  vim.opt.runtimepath:append(os.getenv("KS_PLUGIN"))
  local ks = require("kernelscope")
  ks.setup({
    cmd = vim.fn.json_decode(os.getenv("KS_CMD")),
    init_options = { kernelscope = vim.tbl_extend("keep", { dbUrl = os.getenv("KS_DB") }, settings) },
    on_result = results.commands and function(command, result)
      results.commands[command] = result
    end or nil,
  })
  return ks
end

function H.read(path)
  local file = assert(io.open(path))
  local text = file:read("*a")
  file:close()
  return text
end

return H
