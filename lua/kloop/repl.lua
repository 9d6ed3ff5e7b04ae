-- kloop.repl: the interactive loop: line editing, history, printed results, Ctrl-C.
local core = require("kloop.core")
local native = require("kloop.native")
local ffi = core.ffi
local C = core.C

local M = {}

local function history_path()
  local home = os.getenv("HOME")
  if os.getenv("KLOOP_HISTORY") then return os.getenv("KLOOP_HISTORY") end
  if home then return home .. "/.kloop_history" end
end

local function show(v)
  if type(v) == "table" then
    local ok, cjson = pcall(require, "cjson")
    if ok then
      local ok2, s = pcall(cjson.encode, v)
      if ok2 then return s end
    end
  end
  return tostring(v)
end

local function print_results(n, ...)
  if n == 0 then return end
  local out = {}
  for i = 1, n do out[i] = show((select(i, ...))) end
  print(table.concat(out, "\t"))
end

-- Compiles a line (or lines): an expression first ("return ..."), then a statement.
-- Returns fn, or nil + "incomplete", or nil + error message.
local function compile(src)
  local fn = loadstring("return " .. src, "=stdin")
  if fn then return fn end
  local err
  fn, err = loadstring(src, "=stdin")
  if fn then return fn end
  if err:match("<eof>$") or err:match("<eof>'?$") then return nil, "incomplete" end
  return nil, err
end

function M.main()
  _G.kloop = _G.kloop or require("kloop")
  local edit = C.kl_line_init(history_path())
  if C.kl_isatty(0) == 1 then
    io.stdout:write(string.format("kloop %s REPL (%s). Ctrl-D exits; kloop.help() lists the API.\n",
      core.version(), jit.version))
  end
  local buffer = nil
  while true do
    native.sigint_reset()
    local line_ptr = C.kl_line_read(buffer and ">> " or "> ")
    if line_ptr == nil then
      io.stdout:write("\n")
      break
    end
    local line = ffi.string(line_ptr)
    C.kl_free(line_ptr)
    local src = buffer and (buffer .. "\n" .. line) or line
    local ok, fn, err = pcall(compile, src)  -- a Ctrl-C at the prompt lands here
    if not ok then
      buffer = nil
    elseif not fn and err == "incomplete" then
      buffer = src
    else
      buffer = nil
      C.kl_line_add_history(src)
      if not fn then
        io.stderr:write(err, "\n")
      else
        -- Compiled traces never run the Ctrl-C hook; interpreted REPL chunks do (the
        -- kloop library they call stays compiled).
        jit.off(fn, true)
        local res = { xpcall(fn, function(e) return debug.traceback(e, 2) end) }
        if res[1] then
          print_results(#res - 1, unpack(res, 2, table.maxn(res)))
        else
          io.stderr:write(tostring(res[2]), "\n")
        end
      end
    end
  end
  C.kl_line_save()
  return 0
end

return M
