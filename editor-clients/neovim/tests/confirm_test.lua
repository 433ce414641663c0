-- Headless Neovim test (tests/editors/test_editor_neovim.py): what masks memory asks first, through
-- Neovim's own window/showMessageRequest handler (`vim.fn.inputlist` before 0.10, `vim.ui.select`
-- from 0.10 on; both replaced here by a person who answers from a list). `:KernelscopeMaskHalf`
-- answered Cancel, the lens "Mask half & restart" run and the question dismissed, then
-- `:KernelscopeMaskHalf` answered with its first action (Mask). Records each question, each
-- result, the memory files' text before and after the two refusals, and any job's end, as JSON
-- to $KS_OUT.
local results = { commands = {}, asked = {}, deprecated = {}, finished = {}, lens_picked = {} }
local harness = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "harness.lua")
harness.watch_deprecations(results)
local finish = harness.finisher(os.getenv("KS_OUT"), results)

local answers = {} -- what the person answers next: "yes", "cancel" or "dismiss"
local function answer(message, count)
  local given = table.remove(answers, 1)
  table.insert(results.asked, { message = message, answer = given })
  if given == "yes" then
    return 1
  end
  return given == "cancel" and count or nil
end

-- before 0.10: inputlist({message, "\nRequest Actions:", "1. Mask", "2. Cancel"})
vim.fn.inputlist = function(lines)
  results.asked_with = "inputlist"
  return answer(lines[1], #lines - 2) or 0
end
-- 0.10+: vim.ui.select for the question; on every version, the lens to run at the cursor
vim.ui.select = function(items, opts, on_choice)
  if opts and opts.kind == "lsp_message" then
    results.asked_with = "vim.ui.select"
    local picked = answer(opts.prompt, #items)
    return on_choice(picked and items[picked] or nil, picked)
  end
  for i, item in ipairs(items) do
    local command = item.lens and item.lens.command or {} -- codelens.run's {client, lens}
    table.insert(results.lens_picked, command.title or "?")
    if command.title == "Mask half & restart" then
      return on_choice(item, i)
    end
  end
  return on_choice(nil, nil)
end

local function memory_text()
  local texts = {}
  for _, path in ipairs(vim.fn.glob(os.getenv("KS_WS") .. "/memory/*.json", false, true)) do
    texts[vim.fn.fnamemodify(path, ":t")] = harness.read(path)
  end
  return texts
end

local ok, err = pcall(function()
  local ks = harness.setup(results, { trusted = false, agent = os.getenv("KS_AGENT") })
  vim.cmd("edit " .. os.getenv("KS_WS") .. "/kernel.py")
  local bufnr = vim.api.nvim_get_current_buf()
  local c = harness.attached_client(bufnr, results)
  harness.record_finished(c, results.finished)
  local before = memory_text()
  local function ran(command)
    assert(vim.wait(30000, function()
      return results.commands[command] ~= nil
    end, 50), command .. " never answered")
    local result = results.commands[command]
    results.commands[command] = nil
    return result
  end

  answers = { "cancel" }
  vim.cmd("KernelscopeMaskHalf")
  results.mask_cancelled = ran("kernelscope.maskHalf")

  assert(vim.wait(30000, function()
    for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
      if lens.command and lens.command.title == "Mask half & restart" then
        results.restart_lens_arguments = lens.command.arguments
        return true
      end
    end
    return false
  end, 50), "no Mask half & restart lens")
  answers = { "dismiss" }
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.codelens.run()
  results.restart_dismissed = ran("kernelscope.restart")
  vim.wait(1000) -- a job started by mistake would say so by now (the agent prints and exits)
  results.memory_unchanged = vim.deep_equal(before, memory_text())

  answers = { "yes" }
  vim.cmd("KernelscopeMaskHalf")
  results.mask_done = ran("kernelscope.maskHalf")
end)
harness.conclude(ok, err, results, finish)
