-- Headless Neovim test of a warning on a memory record that cannot be read, driven by
-- tests/editors/test_editor_neovim.py: kernel.py opened (the record is not), the server
-- publishes the warning on memory/v1.json; what Neovim does with a publication for a file no
-- buffer shows: the buffer it keeps for the URI (before the file is opened) and what
-- vim.diagnostic lists and draws once the file is opened (and when asked to show it); then the
-- record fixed on disk clears it. Writes what happened as JSON to $KS_OUT.
local out_path = os.getenv("KS_OUT")
local results = { deprecated = {} }

local harness = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "harness.lua")
harness.watch_deprecations(results)
local finish = harness.finisher(out_path, results)

local function warnings(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(found, { lnum = d.lnum, code = d.code, source = d.source, message = d.message, severity = d.severity })
  end
  return found
end

local function drawn(bufnr) -- what vim.diagnostic drew in the buffer: its named namespaces'
  -- marks (0.10+: underline, signs, virtual text) and placed signs (0.7, whose underline
  -- namespace has no name)
  local count = 0
  for name, ns in pairs(vim.api.nvim_get_namespaces()) do
    if name:find("diagnostic") then
      count = count + #vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {})
    end
  end
  for _, placed in ipairs(vim.fn.sign_getplaced(bufnr, { group = "*" })) do
    count = count + #placed.signs
  end
  return count
end

local ok, err = pcall(function()
  local ws = os.getenv("KS_WS")
  local record = ws .. "/memory/v1.json"
  local record_uri = vim.uri_from_fname(record)
  results.published = {} -- the number of diagnostics of each publication for the record
  local on_publish = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(e, params, ctx, config)
    if params and params.uri == record_uri then
      table.insert(results.published, #params.diagnostics)
    end
    return on_publish(e, params, ctx, config) -- Neovim's own handler, as a user has it
  end
  harness.setup(results, { mode = "interpreter", seeds = 1, debounceMs = 100 })

  vim.cmd("edit " .. ws .. "/kernel.py")
  local kernel = vim.api.nvim_get_current_buf()
  harness.attached_client(kernel, results)
  results.warned = vim.wait(30000, function()
    return #results.published > 0
  end, 50)

  -- not opened yet: the buffer Neovim keeps for the URI, and what vim.diagnostic lists for it
  local before = vim.fn.bufnr(record)
  results.buffer_before_open = before ~= -1
  results.loaded_before_open = before ~= -1 and vim.api.nvim_buf_is_loaded(before)
  results.before_open = before ~= -1 and warnings(before) or {}
  results.all_before_open = #vim.diagnostic.get()

  -- opened: the same buffer, the warning listed and drawn (by the plugin's BufReadPost: Neovim
  -- draws nothing on load)
  vim.cmd("edit " .. record)
  local opened = vim.api.nvim_get_current_buf()
  results.same_buffer = opened == before
  results.record_client = harness.client(opened) ~= nil
  vim.wait(1000, function()
    return drawn(opened) > 0
  end, 50)
  results.after_open = warnings(opened)
  results.drawn = drawn(opened)
  vim.diagnostic.show(nil, opened) -- drawn when asked (what counts as drawn is right)
  results.drawn_when_shown = drawn(opened)

  -- the record fixed on disk (the watcher): the warning is cleared in the open buffer
  local count = #results.published
  local file = assert(io.open(record, "w"))
  file:write(os.getenv("KS_GOOD_RECORD"))
  file:close()
  results.cleared = vim.wait(30000, function()
    return #results.published > count and #warnings(opened) == 0
  end, 50)
  results.after_fix = warnings(opened)
end)
harness.conclude(ok, err, results, finish)
