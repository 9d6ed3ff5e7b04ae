-- kloop.core.sys: the wrapper of the core's small system helpers (clock, pid, tty, random
-- bytes, the content hash, environment scrubbing, Ctrl-C): the only Lua code that calls
-- these kl_* functions.
local cffi = require("kloop.core.ffi")
local native = require("kloop.native")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- Monotonic seconds.
function M.now() return C.kl_now() end
function M.getpid() return C.kl_getpid() end
function M.cpu_count() return tonumber(C.kl_cpu_count()) end
function M.mkdir_p(path) return C.kl_mkdir_p(path) == 0 end
function M.rm_rf(path) return C.kl_rm_rf(path) == 0 end
function M.isatty(fd) return C.kl_isatty(fd) == 1 end
function M.dir_writable(path) return C.kl_dir_writable(path) == 1 end
-- This binary's path (/proc/self/exe), or nil.
function M.exe_path()
  local buf = ffi.new("char[4096]")
  if C.kl_exe_path(buf, 4096) ~= 0 then return nil end
  return ffi.string(buf)
end

-- Frees memory the core allocated (kl_free).
function M.free(p) C.kl_free(p) end

-- FNV-1a over a string, 64 bit, as a uint64_t cdata.
function M.hash64(s, seed) return C.kl_hash64(s, #s, seed or 0) end

-- Hex of a 64-bit hash (uint64_t cdata) or a number.
function M.hex64(h) return (string.format("%016x", h):gsub("ULL$", "")) end

-- The content hash kloop names texts by (sources, prompts, requests): 32 hex digits,
-- two FNV-1a passes with different seeds. The one copy of this policy.
function M.content_hash(s)
  return M.hex64(C.kl_hash64(s, #s, 0)) .. M.hex64(C.kl_hash64(s, #s, 0x9e3779b97f4a7c15ULL))
end

-- n bytes from getrandom as a Lua string, or nil, message.
function M.random_bytes(n)
  local b = ffi.new("uint8_t[?]", n)
  if C.kl_random_bytes(b, n) ~= 0 then return nil, "getrandom failed" end
  return ffi.string(b, n)
end

-- Wipes NAME from the environment (and /proc/self/environ): copies wiped, or -1.
function M.env_scrub(name) return C.kl_env_scrub(name) end

-- ---- Ctrl-C and termination signals ----
-- The binding layer counts SIGINT/SIGTERM/SIGHUP and its hook raises M.INTERRUPTED at
-- the next instruction; code that waits polls interrupted() and raises the same value:
-- the one error value that means "the user stopped us" (created in src/kl_lua.c, it
-- prints and concatenates as "interrupted"). A pcall that catches it re-raises it.
M.INTERRUPTED = native.INTERRUPTED

function M.interrupted() return C.kl_sigint_pending() > 0 end
-- The signal that started the pending interruption, 0 if none.
function M.interrupt_signal() return C.kl_sigint_signal() end
function M.check_interrupt() if C.kl_sigint_pending() > 0 then error(M.INTERRUPTED, 0) end end
-- True when an error value means an interruption.
function M.is_interrupt(e) return rawequal(e, M.INTERRUPTED) end

return M
