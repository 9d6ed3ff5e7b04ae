-- kloop.cli.repl: the interactive loop: line editing, history, printed results, Ctrl-C.
local cjson = require("cjson")
local core = require("kloop.core.ffi")
local line_edit = require("kloop.core.line")
local sys = require("kloop.core.sys")
local native = require("kloop.native")

local M = {}

local function history_path()
  local home = os.getenv("HOME")
  if os.getenv("KLOOP_HISTORY") then return os.getenv("KLOOP_HISTORY") end
  if home then return home .. "/.kloop_history" end
end

local function show(v)
  if type(v) == "table" then
    local ok, s = pcall(cjson.encode, v)
    if ok then return s end
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

local function traceback(e) return debug.traceback(e, 2) end
local function pack(...) return { n = select("#", ...), ... } end

-- One prompt: reads a line and runs what is complete. Returns the pending chunk (a
-- statement not finished yet), nil, or false at the end of the input.
local function step(buffer)
  native.sigint_reset()
  local line, ended = line_edit.read(buffer and ">> " or "> ")
  if not line then
    -- Ctrl-C at the prompt drops the line (and a pending multi-line chunk), as luajit
    -- and python do; the session and its variables stay
    if ended == "interrupted" then return nil end
    io.stdout:write("\n")
    return false
  end
  local src = buffer and (buffer .. "\n" .. line) or line
  -- `=expr` prints the value, as in the Lua 5.1 REPL
  local code = (not buffer and line:match("^%s*=")) and ("return " .. line:gsub("^%s*=", "", 1)) or src
  local fn, err = compile(code)
  if not fn and err == "incomplete" then return src end
  line_edit.add_history(src)
  if not fn then
    io.stderr:write(err, "\n")
    return nil
  end
  -- Compiled traces never run the Ctrl-C hook; interpreted REPL chunks do (the
  -- kloop library they call stays compiled).
  jit.off(fn, true)
  local res = pack(xpcall(fn, traceback))
  if res[1] then
    print_results(res.n - 1, unpack(res, 2, res.n))
  else
    io.stderr:write(tostring(res[2]), "\n")
  end
  return nil
end

function M.main()
  _G.kloop = _G.kloop or require("kloop")
  line_edit.init(history_path())
  if sys.isatty(0) then
    io.stdout:write(string.format("kloop %s REPL (%s). Ctrl-D exits; kloop.help() lists the API.\n",
      core.version(), jit.version))
  end
  local buffer = nil
  while true do
    local ok, r = pcall(step, buffer)
    if not ok then
      -- a Ctrl-C that landed outside the chunk (between prompts, or while a result
      -- printed) is one more Ctrl-C at the prompt: a fresh prompt, nothing else
      buffer = nil
      if not sys.is_interrupt(r) then io.stderr:write(tostring(r), "\n") end
    elseif r == false then
      break
    else
      buffer = r
    end
  end
  line_edit.save()
  return 0
end

return M
