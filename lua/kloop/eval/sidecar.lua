-- kloop.eval.sidecar: running a task sidecar's code: the sandbox its functions see, the
-- guarded call (a deadline and Ctrl-C), the wrapper that guards every later call of a
-- sidecar function, and running the sidecar file itself to its raw task table.
--
-- Sidecar code runs under a deadline and stops at Ctrl-C: a count hook looks at the
-- clock and the pending-signal counter, and the sidecar's functions run interpreted
-- (compiled traces never call hooks). A C function that never returns (a pattern
-- that backtracks forever) is out of its reach.
local sys = require("kloop.core.sys")

local M = {}

-- What sidecar code sees: plain Lua and a few size helpers, nothing that reaches out.
function M.sandbox_env(extra)
  local env = {
    math = math, string = string, table = table, tonumber = tonumber, tostring = tostring,
    ipairs = ipairs, pairs = pairs, type = type, error = error, assert = assert, select = select,
    unpack = unpack, pcall = pcall,
    cdiv = function(a, b) return math.floor((a + b - 1) / b) end,
    min = math.min, max = math.max, floor = math.floor, ceil = math.ceil,
  }
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

M.call_deadline = 5 -- seconds one call of sidecar code may run

local guard_depth, guard_t0, guard_limit, guard_what, guard_why = 0, 0, 0, nil, nil

local guard_at -- where the guarded code was when the hook last looked

local function guard_hook()
  local info = debug.getinfo(2, "Sl")
  guard_at = info and info.currentline and info.currentline > 0
    and string.format(" at %s:%d", info.short_src, info.currentline) or guard_at
  local why
  if sys.interrupted() then why = "interrupted"
  elseif sys.now() - guard_t0 > guard_limit then why = "deadline" end
  if why then
    guard_why = why
    local at = guard_at or ""
    debug.sethook()
    if why == "interrupted" then error(sys.INTERRUPTED, 0) end
    error(string.format("%s ran for more than %g s without returning%s (an endless loop?)", guard_what, guard_limit, at), 0)
  end
end

-- Calls fn(...) under the deadline; returns pcall's results. `what` names the code
-- ("the launch function of kernels/x.lua"). Nested calls share the outer deadline.
-- An interruption (this hook's or the binding layer's Ctrl-C) returns false,
-- sys.INTERRUPTED and a third value saying where it stopped the code
-- ("interrupted (Ctrl-C) in the sidecar's top level at x.lua:2").
function M.guarded_pcall(what, fn, ...)
  if guard_depth > 0 then return pcall(fn, ...) end
  if type(fn) == "function" then pcall(jit.off, fn, true) end
  local hook, mask, count = debug.gethook()
  guard_depth, guard_t0, guard_limit, guard_what, guard_why, guard_at = 1, sys.now(), M.call_deadline, what, nil, nil
  debug.sethook(guard_hook, "", 1000)
  local res = { pcall(fn, ...) }
  debug.sethook()
  guard_depth = 0
  if type(hook) == "function" then debug.sethook(hook, mask, count) end
  if not res[1] and (guard_why == "interrupted" or sys.is_interrupt(res[2]) or (guard_why == nil and sys.interrupted())) then
    return false, sys.INTERRUPTED, string.format("interrupted (Ctrl-C) in %s%s", what, guard_at or "")
  end
  return unpack(res, 1, table.maxn(res))
end

-- A function of the sidecar wrapped so every call runs guarded; errors are re-raised
-- with what was running, an interruption as sys.INTERRUPTED. check(result) may refuse a
-- result (returns nil, msg).
function M.guard(file, name, fn, check)
  if type(fn) ~= "function" then return fn end
  pcall(jit.off, fn, true)
  local what = string.format("the %s function of %s", name, file)
  return function(...)
    local res = { M.guarded_pcall(what, fn, ...) }
    if not res[1] then
      local e = res[2]
      if sys.is_interrupt(e) then error(e, 0) end
      if type(e) == "table" and e.message then e = e.message end
      error(tostring(e), 0)
    end
    if check then
      local ok, msg = check(res[2])
      if not ok then error(what .. " " .. msg, 0) end
    end
    return unpack(res, 2, table.maxn(res))
  end
end

-- Runs the sidecar file lua_path (guarded, in the sandbox, where kloop.task returns its
-- table): the raw task table, or nil, a message that names the file.
function M.run_file(lua_path)
  local chunk, err = loadfile(lua_path)
  if not chunk then return nil, err end
  return M.run_chunk(chunk, lua_path)
end

-- The same for a sidecar's text (a worker in its sandbox opens no files: the parent
-- sends the text). name is the file it came from, for messages.
function M.run_text(text, name)
  local chunk, err = loadstring(text, "@" .. name)
  if not chunk then return nil, err end
  return M.run_chunk(chunk, name)
end

function M.run_chunk(chunk, lua_path)
  local env = M.sandbox_env()
  env.kloop = { task = function(t) return t end }
  setfenv(chunk, env)
  -- interpreted (with every function it defines), so the deadline hook sees it run
  jit.off(chunk, true)
  local ok, t, where = M.guarded_pcall("the sidecar's top level", chunk)
  if not ok then
    if sys.is_interrupt(t) then t = where end
    if type(t) == "table" and t.message then return nil, t.message end
    t = tostring(t)
    if t:find(lua_path, 1, true) == 1 then return nil, t end
    return nil, lua_path .. ": " .. t
  end
  if type(t) ~= "table" then
    return nil, lua_path .. ": the sidecar must return kloop.task { ... } (it returned " .. type(t) .. ")"
  end
  return t
end

return M
