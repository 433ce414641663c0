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

function H.read(path)
  local file = assert(io.open(path))
  local text = file:read("*a")
  file:close()
  return text
end

return H
