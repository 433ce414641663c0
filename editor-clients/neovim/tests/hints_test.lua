-- Headless Neovim test of the kernelscope plugin's history hints, driven by
-- tests/editors/test_editor_neovim.py (test_neovim_hints) on every Neovim version CI has, in a workspace
-- with a git history (V0..V4 commits, kernel.py = v4's): open kernel.py; hover on the launch
-- line through the attached client (blame: "introduced in v1"); read the inlay hints as drawn
-- (Neovim's own inlay-hint extmarks from 0.10 on, the plugin's virtual text before) for the
-- "tried ..." label on the launch line, and again after they were wiped and a memory record
-- rewritten (only the server's `workspace/inlayHint/refresh` can redraw them then); write v0's
-- kernel over the buffer and `:write` (an "identical to v0" diagnostic, and no benchmark starts
-- or finishes for it); then `:KernelscopeCompare v0 v4` (a scratch buffer with the comparison),
-- its JSON form (the same buffer again) and a wrong argument count (an error). Every
-- vim.deprecate call and the message history are recorded. Writes what happened as JSON to
-- $KS_OUT.
local out_path = os.getenv("KS_OUT")
local results = { deprecated = {}, finished = {}, progress = {}, notified = {} }

-- Recorded before anything runs: a deprecated call anywhere, reported or not.
local harness = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "harness.lua")
harness.watch_deprecations(results)

-- What the plugin tells the user (errors of a wrong command line among them).
local notify = vim.notify
vim.notify = function(message, level, ...)
  table.insert(results.notified, { message = tostring(message), level = level })
  return notify(message, level, ...)
end

local finish = harness.finisher(out_path, results)
local read = harness.read

local ok, err = pcall(function()
  -- trusted, interpreter mode: a save COULD be benchmarked, unless the server skips it
  local ks = harness.setup(results, { mode = "interpreter", trusted = true, seeds = 1, debounceMs = 100 })
  local launch = tonumber(os.getenv("KS_LAUNCH_LINE"))
  local kernel = os.getenv("KS_WS") .. "/kernel.py"
  vim.cmd("edit " .. kernel)
  local bufnr = vim.api.nvim_get_current_buf()
  results.launch_text = vim.api.nvim_buf_get_lines(bufnr, launch, launch + 1, false)[1]

  local function client() -- the kernelscope client attached to the buffer now
    return harness.client(bufnr)
  end
  local c = harness.attached_client(bufnr, results)

  -- every job the server finishes or starts reporting progress for (the plugin's handlers run)
  harness.record_finished(c, results.finished)
  local on_progress = c.handlers["$/progress"] or vim.lsp.handlers["$/progress"]
  c.handlers["$/progress"] = function(e, params, ctx, config)
    table.insert(results.progress, params)
    if on_progress then
      return on_progress(e, params, ctx, config)
    end
  end

  -- 1. blame in hover on the launch line, through the attached client's own request
  local hover
  ks.call(c, "request", "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = launch, character = 8 },
  }, function(e, result)
    hover = { error = e and (e.message or vim.inspect(e)) or nil, result = result or vim.NIL }
  end, bufnr)
  vim.wait(30000, function()
    return hover ~= nil
  end, 50)
  results.hover = hover
  local contents = hover and type(hover.result) == "table" and hover.result.contents
  results.hover_text = type(contents) == "table" and (contents.value or contents[1]) or contents

  -- 2. the inlay hints as drawn: Neovim's own namespace from 0.10 on, the plugin's before
  local builtin = vim.lsp.inlay_hint ~= nil and vim.fn.has("nvim-0.10") == 1
  results.builtin_hints = builtin
  local function drawn_hints()
    local found = {}
    for name, ns in pairs(vim.api.nvim_get_namespaces()) do
      local ours = ns == ks.hint_namespace
      local neovims = builtin and name:lower():find("inlayhint") ~= nil
      if ours or neovims then
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
          for _, chunk in ipairs(mark[4].virt_text or {}) do
            if chunk[1]:find("%S") then
              table.insert(found, { line = mark[2], col = mark[3], text = chunk[1], namespace = name })
            end
          end
        end
      end
    end
    return found
  end
  local function tried_on_launch()
    for _, item in ipairs(drawn_hints()) do
      if item.line == launch and item.text:find("^tried") then
        return item
      end
    end
    return nil
  end
  results.hint_drawn = vim.wait(30000, function()
    vim.cmd("redraw") -- Neovim's own hints are drawn on redraw (a decoration provider)
    return tried_on_launch() ~= nil
  end, 100)
  results.hints = drawn_hints()
  if builtin then
    results.builtin_enabled = vim.lsp.inlay_hint.is_enabled({ bufnr = bufnr })
    results.builtin_labels = {}
    for _, item in ipairs(vim.lsp.inlay_hint.get({ bufnr = bufnr })) do
      local label = item.inlay_hint.label
      table.insert(results.builtin_labels, {
        line = item.inlay_hint.position.line,
        text = type(label) == "string" and label or vim.inspect(label),
      })
    end
  end

  -- the server asks for new hints when memory/ changes (`workspace/inlayHint/refresh`): with the
  -- drawn hints wiped and no refresh event of the plugin's own, only that request redraws them
  local on_refresh = c.handlers["workspace/inlayHint/refresh"]
  results.hint_refreshes = 0
  c.handlers["workspace/inlayHint/refresh"] = function(...)
    results.hint_refreshes = results.hint_refreshes + 1
    return on_refresh(...)
  end
  for name, ns in pairs(vim.api.nvim_get_namespaces()) do
    if ns == ks.hint_namespace or (builtin and name:lower():find("inlayhint")) then
      vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
    end
  end
  results.hints_wiped = tried_on_launch() == nil
  local eventignore = vim.o.eventignore
  vim.o.eventignore = "CursorHold,CursorHoldI,BufEnter"
  local record = os.getenv("KS_WS") .. "/memory/v4.json"
  local text = read(record)
  local file = assert(io.open(record, "w")) -- an agent rewrites a record (the same text)
  file:write(text)
  file:close()
  results.hints_refreshed = vim.wait(30000, function()
    vim.cmd("redraw")
    return tried_on_launch() ~= nil
  end, 100)
  vim.o.eventignore = eventignore

  -- 3. v0's kernel written over kernel.py: "identical to v0", and no benchmark for it
  local started, finished = #results.progress, #results.finished
  local v0 = read(os.getenv("KS_V0_KERNEL")):gsub("\n$", "")
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, vim.split(v0, "\n"))
  results.edited = vim.bo[bufnr].modified
  vim.cmd("write")
  local function identical()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.message:find("^identical to v0") then
        return d
      end
    end
    return nil
  end
  results.identical_seen = vim.wait(30000, function()
    return identical() ~= nil
  end, 50)
  local diagnostic = identical()
  if diagnostic then
    results.diagnostic = {
      message = diagnostic.message,
      severity = diagnostic.severity,
      source = diagnostic.source,
      code = diagnostic.code,
      lnum = diagnostic.lnum,
    }
  end
  results.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(results.diagnostics, { message = d.message, severity = d.severity })
  end
  -- far past the 100 ms debounce, and long enough for a (wrongly started) probe to report
  vim.wait(8000, function()
    return false
  end, 100)
  results.finished_after_save = { unpack(results.finished, finished + 1) }
  results.progress_after_save = { unpack(results.progress, started + 1) }
  results.saved_is_v0 = read(kernel):gsub("\n$", "") == v0

  -- 4. `:KernelscopeCompare v0 v4`: the comparison in a scratch buffer
  local function compare_buffer()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b) == "kernelscope://compare/v0..v4" then
        return b
      end
    end
    return nil
  end
  vim.cmd("KernelscopeCompare v0 v4")
  results.compare_opened = vim.wait(30000, function()
    return compare_buffer() ~= nil
  end, 50)
  local scratch = compare_buffer()
  if scratch then
    results.compare = {
      lines = vim.api.nvim_buf_get_lines(scratch, 0, -1, false),
      buftype = vim.bo[scratch].buftype,
      bufhidden = vim.bo[scratch].bufhidden,
      filetype = vim.bo[scratch].filetype,
      modifiable = vim.bo[scratch].modifiable,
      current = vim.api.nvim_get_current_buf() == scratch,
      windows = #vim.fn.win_findbuf(scratch),
    }
  end
  -- the same command again reuses the buffer and its window
  vim.cmd("wincmd p")
  vim.cmd('KernelscopeCompare {"versionA": "v0", "versionB": "v4"}')
  vim.wait(30000, function()
    return vim.api.nvim_get_current_buf() == scratch
  end, 50)
  results.compare_again = {
    current = vim.api.nvim_get_current_buf() == scratch,
    windows = #vim.fn.win_findbuf(scratch),
    buffers = 0,
  }
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):find("^kernelscope://compare/") then
      results.compare_again.buffers = results.compare_again.buffers + 1
    end
  end

  -- a wrong argument count: an error (raised here, as any error message inside `vim.cmd`)
  local before = #results.notified
  vim.cmd("wincmd p")
  local raised, raised_error = pcall(vim.cmd, "KernelscopeCompare v0")
  results.wrong_count = { unpack(results.notified, before + 1) }
  results.wrong_count_raised = not raised and tostring(raised_error) or vim.NIL
  results.still_attached = client() ~= nil
end)
harness.conclude(ok, err, results, finish)
