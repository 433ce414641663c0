-- Headless Neovim test of the plugin on a workspace's README.md, driven by
-- tests/editors/test_editor_neovim.py: the README (its stop condition written `4,32TB/s`) opened
-- before kernel.py starts the workspace's client, the server's warning shows on its line
-- (vim.diagnostic.get), kernel.py then joins the same client; the README gets no lenses and no
-- hints and its lens, hint and hover requests are answered without an error; the line fixed in
-- the buffer clears the warning, and a save keeps it cleared. A README.md outside a workspace,
-- or in a workspace's subfolder, gets no client. Writes what happened as JSON to $KS_OUT.
local out_path = os.getenv("KS_OUT")
local results = { deprecated = {} }

local harness = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "harness.lua")
harness.watch_deprecations(results)
local finish = harness.finisher(out_path, results)

local CODE = "readme:stop-condition-skipped"

local function warnings(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(found, { lnum = d.lnum, code = d.code, source = d.source, message = d.message, severity = d.severity })
  end
  return found
end

local function has_code(bufnr)
  for _, d in ipairs(warnings(bufnr)) do
    if d.code == CODE then
      return true
    end
  end
  return false
end

local function codelens_marks(bufnr) -- what Neovim drew in the buffer for any lens namespace
  local count = 0
  for name, ns in pairs(vim.api.nvim_get_namespaces()) do
    if name:find("codelens") then
      count = count + #vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {})
    end
  end
  return count
end

local ok, err = pcall(function()
  local ks = harness.setup(results, { mode = "interpreter", trusted = true, seeds = 1, debounceMs = 100 })
  local ws = os.getenv("KS_WS")

  vim.cmd("edit " .. ws .. "/README.md")
  local readme = vim.api.nvim_get_current_buf()
  results.filetype = vim.bo[readme].filetype
  local c = harness.attached_client(readme, results)
  results.client_root = c.config.root_dir
  local published = 0 -- the server's publications for the README (Neovim's handler still runs)
  local readme_uri = vim.uri_from_bufnr(readme)
  c.handlers["textDocument/publishDiagnostics"] = function(e, params, ctx, config)
    if params and params.uri == readme_uri then
      published = published + 1
    end
    return vim.lsp.handlers["textDocument/publishDiagnostics"](e, params, ctx, config)
  end
  results.shown = vim.wait(30000, function()
    return has_code(readme)
  end, 50)
  results.warnings = warnings(readme)

  -- kernel.py joins the README's client (one daemon per workspace)
  vim.cmd("edit " .. ws .. "/kernel.py")
  local kernel = vim.api.nvim_get_current_buf()
  local kc = harness.attached_client(kernel, results)
  results.same_client = kc.id == c.id
  local count = 0
  for _, other in pairs(vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()) do
    if other.name == "kernelscope" then
      count = count + 1
    end
  end
  results.clients = count
  vim.wait(30000, function() -- the kernel's lenses drawn: the lens requests have been answered
    return codelens_marks(kernel) > 0
  end, 50)
  results.kernel_lens_marks = codelens_marks(kernel)

  -- back in the README: no lenses, no hints, each request answered without an error
  vim.cmd("buffer " .. readme)
  local uri = vim.uri_from_bufnr(readme)
  local whole = { start = { line = 0, character = 0 }, ["end"] = { line = vim.api.nvim_buf_line_count(readme), character = 0 } }
  results.answers = {}
  for method, params in pairs({
    ["textDocument/codeLens"] = { textDocument = { uri = uri } },
    ["textDocument/inlayHint"] = { textDocument = { uri = uri }, range = whole },
    ["textDocument/hover"] = { textDocument = { uri = uri }, position = { line = results.warnings[1].lnum, character = 5 } },
  }) do
    local answer = ks.call(c, "request_sync", method, params, 10000, readme) or {}
    results.answers[method] = { err = answer.err and tostring(answer.err.message or answer.err) or vim.NIL, result = answer.result or vim.NIL }
  end
  results.readme_lens_marks = codelens_marks(readme)
  results.readme_hint_marks = #vim.api.nvim_buf_get_extmarks(readme, ks.hint_namespace, 0, -1, {})

  -- the line fixed in the buffer: the warning goes; saved: it stays gone
  local line = nil
  for _, d in ipairs(results.warnings) do
    if d.code == CODE then
      line = d.lnum
    end
  end
  local text = vim.api.nvim_buf_get_lines(readme, line, line + 1, false)[1]
  results.warned_line = text
  vim.api.nvim_buf_set_lines(readme, line, line + 1, false, { (text:gsub("4,32TB/s", "4.32TB/s")) })
  results.cleared = vim.wait(30000, function()
    return #warnings(readme) == 0
  end, 50)
  local before = published
  vim.cmd("write")
  results.published_after_save = vim.wait(30000, function() -- the saved text's publication
    return published > before
  end, 50)
  results.after_save = warnings(readme)
  results.still_attached = harness.client(readme) ~= nil

  -- README.md elsewhere: attached (or not) as it opens, synchronously
  results.elsewhere = {}
  for _, path in ipairs({ os.getenv("KS_PLAIN_README"), ws .. "/plans/README.md" }) do
    vim.cmd("edit " .. path)
    results.elsewhere[path] = harness.client(vim.api.nvim_get_current_buf()) ~= nil
  end
end)
harness.conclude(ok, err, results, finish)
