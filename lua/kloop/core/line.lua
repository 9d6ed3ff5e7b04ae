-- kloop.core.line: the wrapper of the core's line editing for the REPL (kl_line_*):
-- libedit when it opens, plain stdio lines otherwise. The only Lua code that calls them.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- Starts line editing with a history file (nil: none): true when libedit is in use.
function M.init(history_path) return C.kl_line_init(history_path) == 1 end

-- Reads one line after prompt: the line (without its newline); or nil, "interrupted"
-- when Ctrl-C ended it, nil, "eof" at the end of the input.
function M.read(prompt)
  local p = C.kl_line_read(prompt)
  if p == nil then return nil, C.kl_line_interrupted() == 1 and "interrupted" or "eof" end
  local line = ffi.string(p)
  C.kl_free(p)
  return line
end

function M.add_history(line) C.kl_line_add_history(line) end
-- Writes the history file.
function M.save() return C.kl_line_save() end

return M
