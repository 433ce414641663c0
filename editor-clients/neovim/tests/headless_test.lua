-- Headless Neovim test of the kernelscope plugin, driven by tests/test_editor_neovim.py:
-- open kernel.py of a workspace, read the lens texts from the buffer's extmarks, run a
-- lens, run a user command, and write what happened as JSON to $KS_OUT.
local out_path = os.getenv("KS_OUT")
local results = { commands = {} }

local function finish(code)
  local file = io.open(out_path, "w")
  file:write(vim.fn.json_encode(results))
  file:close()
  vim.cmd((code == 0 and "qall!" or "cquit!"))
end

local ok, err = pcall(function()
  vim.opt.runtimepath:append(os.getenv("KS_PLUGIN"))
  local ks = require("kernelscope")
  ks.setup({
    cmd = vim.fn.json_decode(os.getenv("KS_CMD")),
    init_options = { kernelscope = { dbUrl = os.getenv("KS_DB"), mode = "interpreter" } },
    on_result = function(command, result)
      results.commands[command] = result
    end,
  })
  vim.cmd("edit " .. os.getenv("KS_WS") .. "/kernel.py")

  local function client()
    local _, c = next(vim.lsp.buf_get_clients(0))
    return c
  end
  results.attached = vim.wait(30000, function()
    local c = client()
    return c ~= nil and c.initialized == true
  end, 100)

  local function lens_texts()
    local texts = {}
    for name, ns in pairs(vim.api.nvim_get_namespaces()) do
      if name:find("codelens") then
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
          for _, chunk in ipairs(mark[4].virt_text or {}) do
            table.insert(texts, { line = mark[2], text = chunk[1] })
          end
        end
      end
    end
    return texts
  end
  vim.wait(30000, function()
    vim.lsp.codelens.refresh()
    for _, item in ipairs(lens_texts()) do
      if item.text:find("best ") then
        return true
      end
    end
    return false
  end, 500)
  results.lenses = lens_texts()

  -- run the lens above the kernel: its command shows the kernel's history
  for _, item in ipairs(results.lenses) do
    if item.text:find("best ") then
      vim.api.nvim_win_set_cursor(0, { item.line + 1, 0 })
    end
  end
  vim.lsp.codelens.run()
  vim.wait(15000, function()
    return results.commands["kernelscope.showHistory"] ~= nil
  end, 100)

  -- a user command
  vim.cmd('KernelscopeMaskHalf {"dryRun": true, "seed": 1}')
  vim.wait(15000, function()
    return results.commands["kernelscope.maskHalf"] ~= nil
  end, 100)
end)
if not ok then
  results.error = tostring(err)
  finish(1)
else
  finish(0)
end
