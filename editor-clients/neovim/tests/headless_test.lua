-- Headless Neovim test of the kernelscope plugin, driven by tests/editors/test_editor_neovim.py, on
-- every Neovim version CI has: open kernel.py of a workspace, read the lens texts from the
-- buffer's extmarks (the plugin must draw them by itself), run a lens (its arguments must reach
-- the server as the server wrote them) and a user command, then twice let "an agent" rewrite
-- kernel.py on disk so that the kernel moves down, reload the buffer (`:edit!`, then
-- `:checktime` with 'autoread'), and check that the buffer is still attached, the lens moved
-- with the kernel, and an edit + `:write` re-benchmarks (a background probe finishes and the
-- `last probe:` lens shows that probe's verdict); then stop the server and check that a reload
-- starts it again. Every vim.deprecate call and the message history are recorded. Writes what
-- happened as JSON to $KS_OUT.
local out_path = os.getenv("KS_OUT")
local results = { commands = {}, sent = {}, deprecated = {}, reloads = {}, finished = {} }

-- Recorded before anything runs: a deprecated call anywhere, reported or not.
local harness = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "harness.lua")
harness.watch_deprecations(results)

local finish = harness.finisher(out_path, results)
local read = harness.read

local function write(path, text)
  local file = assert(io.open(path, "w"))
  file:write(text)
  file:close()
end

local ok, err = pcall(function()
  local ks = harness.setup(results, { mode = "interpreter", trusted = true, seeds = 1, debounceMs = 100 })
  local kernel = os.getenv("KS_WS") .. "/kernel.py"
  vim.cmd("edit " .. kernel)
  local bufnr = vim.api.nvim_get_current_buf()

  local function client() -- the kernelscope client attached to the buffer now
    return harness.client(bufnr)
  end
  local c = harness.attached_client(bufnr, results)

  -- what the plugin sends (the lens's arguments must reach the server unchanged)
  local request = c.request
  c.request = function(a, b, ...)
    local method, params = a, b
    if type(a) == "table" then
      method, params = b, (...)
    end
    if method == "workspace/executeCommand" then
      table.insert(results.sent, params)
    end
    return request(a, b, ...)
  end
  -- the background probes (the plugin's handler still runs)
  harness.record_finished(c, results.finished)

  local function lenses() -- drawn for the client attached now (a dead client's may linger)
    local found = {}
    local attached = client()
    for name, ns in pairs(vim.api.nvim_get_namespaces()) do
      if attached and name:find("codelens:" .. attached.id .. "$") then
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
          for _, chunk in ipairs(mark[4].virt_text or {}) do
            if chunk[1]:find("%S") then
              table.insert(found, { line = mark[2], text = chunk[1] })
            end
          end
        end
      end
    end
    return found
  end
  local function lens(pattern, line)
    for _, item in ipairs(lenses()) do
      if item.text:find(pattern) and (line == nil or item.line == line) then
        return item
      end
    end
    return nil
  end

  -- the lens above the kernel; "(stale) best ..." while a probe of new code runs
  local function best_lens(line)
    return lens("^best ", line) or lens("^%(stale%) best ", line)
  end

  -- no vim.lsp.codelens.refresh() here: the plugin draws the lenses by itself
  vim.wait(30000, function()
    return lens("^best ") ~= nil and lens("^target ") ~= nil
  end, 50)
  results.lenses = lenses()
  assert(lens("^best "), "no kernel lens was drawn")

  -- run the lens above the kernel: its command shows the kernel's history
  vim.api.nvim_win_set_cursor(0, { lens("^best ").line + 1, 0 })
  local kernel_lens
  for _, item in ipairs(vim.lsp.codelens.get(bufnr)) do
    if item.command and item.command.title:find("^best ") then
      kernel_lens = item
    end
  end
  results.lens_arguments = vim.deepcopy(kernel_lens.command.arguments)
  vim.lsp.codelens.run()
  vim.wait(15000, function()
    return results.commands["kernelscope.showHistory"] ~= nil
  end, 50)
  results.lens_arguments_after_run = kernel_lens.command.arguments -- left as they were

  -- user commands: one per command the server offers (none copied by hand), the workspace
  -- as the server names it
  local served_by = ks.buf_client(vim.api.nvim_get_current_buf())
  results.offered = served_by.server_capabilities.executeCommandProvider.commands
  results.user_commands = {}
  for _, command in ipairs(results.offered) do
    local name = "Kernelscope" .. command:sub(#"kernelscope." + 1, #"kernelscope." + 1):upper()
      .. command:sub(#"kernelscope." + 2)
    results.user_commands[command] = vim.fn.exists(":" .. name) == 2
  end
  results.server_workspace = ks.server_workspace(served_by, vim.api.nvim_get_current_buf())
  vim.cmd('KernelscopeMaskHalf {"dryRun": true, "seed": 1}')
  vim.wait(15000, function()
    return results.commands["kernelscope.maskHalf"] ~= nil
  end, 50)

  -- An agent rewrites kernel.py (the kernel moves down by `shift` lines), the buffer is
  -- reloaded, then edited and saved: the save must re-benchmark.
  local function rewrite_reload_save(reload, shift, edit)
    local report = { reload = reload }
    table.insert(results.reloads, report)
    local function probed_since(count)
      for i = count + 1, #results.finished do
        local f = results.finished[i]
        if f.background == true and not f.cancelled then
          return true
        end
      end
      return false
    end
    vim.wait(30000, function()
      return best_lens() ~= nil
    end, 50)
    local before_rewrite = best_lens()
    assert(before_rewrite, "no kernel lens before the rewrite: " .. vim.inspect(lenses()))
    local kernel_line = before_rewrite.line
    local start = #results.finished
    local original = read(kernel)
    local header = {}
    for i = 1, shift do
      header[i] = "# rewritten by an agent, line " .. i
    end
    local text = table.concat(header, "\n") .. "\n" .. original
    write(kernel .. ".tmp", text) -- as agents do: a new file renamed over the old one
    assert(os.rename(kernel .. ".tmp", kernel))
    vim.cmd(reload)
    report.buffer_has_rewrite = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == header[1]
    report.attached = vim.wait(10000, function()
      return client() ~= nil
    end, 50)
    report.lens_moved = vim.wait(20000, function()
      return best_lens(kernel_line + shift) ~= nil
    end, 50)
    report.lenses = lenses()

    -- wait until the probe the rewrite set off (the daemon watches the disk) is done
    report.rewrite_probed = vim.wait(30000, function()
      return probed_since(start)
    end, 100)
    local before = #results.finished
    local current = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, vim.split(edit(current), "\n"))
    report.edited = vim.bo[bufnr].modified
    vim.cmd("write")
    report.probed = vim.wait(90000, function()
      return probed_since(before)
    end, 100)
    report.finished = { unpack(results.finished, before + 1) }
    -- the lens shows the verdict of the last probe (whatever the runner made of the edit)
    local last
    for _, f in ipairs(report.finished) do
      if f.background == true and not f.cancelled then
        last = f
      end
    end
    if last then
      local result = last.result or {}
      report.passed = result.passed == true
      report.verdict = report.passed and "PASS" or ("FAIL (" .. ((result.error or {}).kind or "gate") .. ")")
    end
    vim.wait(20000, function()
      local probe = lens("^last probe: ")
      return probe ~= nil
        and probe.text:sub(1, #"last probe: " + #(report.verdict or "?")) == "last probe: " .. (report.verdict or "?")
        and not probe.text:find("stale")
    end, 100)
    report.lenses_after_save = lenses()
    report.still_attached = client() ~= nil
    return report
  end

  -- 1. `:edit!` after a rewrite; the edit breaks the kernel (its probe cannot pass)
  rewrite_reload_save("edit!", 3, function(text)
    return (text:gsub("x %+ y, mask=mask", "x - y, mask=mask"))
  end)
  -- 2. `:checktime` with 'autoread' after a rewrite; the edit fixes the kernel again
  vim.o.autoread = true
  rewrite_reload_save("checktime", 2, function(text)
    return (text:gsub("x %- y, mask=mask", "x + y, mask=mask"))
  end)

  -- 3. the daemon went away (a crash, `:LspStop`): a reload starts it again and attaches
  local gone = client().id
  vim.lsp.stop_client(gone, true)
  results.stopped = vim.wait(10000, function()
    return client() == nil and vim.lsp.get_client_by_id(gone) == nil -- its process has exited
  end, 50)
  vim.cmd("edit!")
  results.restarted = vim.wait(30000, function()
    local c = client()
    return c ~= nil and c.id ~= gone and c.initialized == true
  end, 50)
  results.restarted_lens = vim.wait(30000, function()
    return best_lens(7 + 3 + 2) ~= nil
  end, 50)
  results.restarted_lenses = lenses()
end)
harness.conclude(ok, err, results, finish)
