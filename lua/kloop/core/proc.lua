-- kloop.core.proc: the wrapper of the core's child processes (kl_proc_*, kl_chan_*): the
-- only Lua code that calls them. A Proc owns one child; when a Proc is collected without
-- close() or kill() (a REPL evaluator dropped on the floor), its finalizer kills and
-- reaps the child, so no worker and no CUDA context outlive their owner.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

local Proc = {}
Proc.__index = Proc

-- The raw kl_proc is kept in a one-element array with a finalizer; the table holds it.
local function finalize(cell)
  local p = cell[0]
  if p.pid > 0 and p.exited == 0 then C.kl_proc_kill(p) end
end

-- kl_proc_spawn into p (a kl_proc, or an array of one) with NULL-terminated argv and
-- env_keep lists: true, or nil, msg.
local function start(p, argv, env_keep)
  local cargv = ffi.new("const char*[?]", #argv + 1, argv)
  cargv[#argv] = nil
  local cenv = nil
  if env_keep then
    cenv = ffi.new("const char*[?]", #env_keep + 1, env_keep)
    cenv[#env_keep] = nil
  end
  local err = ffi.new("kl_err")
  if C.kl_proc_spawn(p, cargv, cenv, err) ~= 0 then return nil, ffi.string(err.msg) end
  return true
end

-- Starts argv (kloop's own binary or a compiler) with framed pipes on fds 3/4 and its
-- output drained. env_keep: variable-name prefixes passed through (nil keeps the whole
-- environment). Returns a Proc, or nil, msg.
function M.spawn(argv, env_keep)
  local cell = ffi.new("kl_proc[1]")
  local ok, err = start(cell, argv, env_keep)
  if not ok then return nil, err end
  return setmetatable({ cell = ffi.gc(cell, finalize), raw = cell[0], pid = cell[0].pid }, Proc)
end

-- Sends one framed message: true, or nil, msg.
function Proc:send(s)
  local err = ffi.new("kl_err")
  if C.kl_proc_send(self.raw, s, #s, err) ~= 0 then return nil, ffi.string(err.msg) end
  return true
end

-- Waits up to timeout_s for one reply, draining the child's output meanwhile:
-- the reply, or nil, "timeout"|"error", msg.
function Proc:recv(timeout_s)
  local data, n = ffi.new("char*[1]"), ffi.new("size_t[1]")
  local err = ffi.new("kl_err")
  local st = C.kl_proc_recv(self.raw, math.floor(timeout_s * 1000), data, n, err)
  if st == C.KL_ETIMEOUT then return nil, "timeout", ffi.string(err.msg) end
  if st ~= 0 then return nil, "error", ffi.string(err.msg) end
  local s = ffi.string(data[0], n[0])
  C.kl_free(data[0])
  return s
end

-- Is a reply (or the end of the channel) ready within timeout_s? (Proc:recv then takes it.)
function Proc:ready(timeout_s)
  local arr = ffi.new("kl_proc*[1]", self.cell)
  return C.kl_proc_wait_any(arr, 1, math.floor((timeout_s or 0) * 1000)) == 0
end

-- The first of `procs` (a list of Procs) with a reply ready within timeout_s: its index
-- in the list, or nil when the time is up. Every child's output is drained meanwhile.
function M.wait_any(procs, timeout_s)
  local n = #procs
  if n == 0 then return nil end
  local arr = ffi.new("kl_proc*[?]", n)
  for i, p in ipairs(procs) do arr[i - 1] = p.cell end
  local k = C.kl_proc_wait_any(arr, n, math.floor((timeout_s or 0) * 1000))
  if k < 0 then return nil end
  return k + 1
end

-- The last bytes the child printed (kept after it exits).
function Proc:tail() return ffi.string(self.raw.tail, self.raw.tail_len) end
function Proc:output_total() return tonumber(self.raw.out_total) end
-- The raw waitpid status once reaped, else nil.
function Proc:exit_status() return self.raw.exited == 1 and self.raw.exit_status or nil end
function Proc:exited() return self.raw.exited == 1 end

-- SIGKILL and reap.
function Proc:kill() C.kl_proc_kill(self.raw) end

-- Closes the pipes, waits up to grace_ms, then kills: true, or nil, "timeout" when the
-- child had to be killed, or nil, "error".
function Proc:close(grace_ms)
  local st = C.kl_proc_close(self.raw, grace_ms)
  if st == C.KL_ETIMEOUT then return nil, "timeout" end
  if st ~= 0 then return nil, "error" end
  return true
end

-- Worker side: fds 3 (requests) and 4 (replies).
function M.chan_recv(fd)
  local data, n = ffi.new("char*[1]"), ffi.new("size_t[1]")
  local err = ffi.new("kl_err")
  if C.kl_chan_recv(fd, data, n, err) ~= 0 then return nil, ffi.string(err.msg) end
  local s = ffi.string(data[0], n[0])
  C.kl_free(data[0])
  return s
end

function M.chan_send(fd, s)
  local err = ffi.new("kl_err")
  if C.kl_chan_send(fd, s, #s, err) ~= 0 then return nil, ffi.string(err.msg) end
  return true
end

return M
