-- kloop.core.relay: the wrapper of kl_relay_* (the proxy side of a remote worker): the
-- only Lua code that calls them.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

local END_KINDS = { [0] = "exited", [1] = "signaled", [2] = "lost" }

-- Connects to sock_path, sends hello, then relays in_fd -> socket and the remote
-- worker's replies -> out_fd, its output -> log_fd, until either side ends. Blocks.
-- Returns { kind = "exited"|"signaled"|"lost", code = n, what = words }, or nil, msg
-- when the socket could not be reached.
function M.run(sock_path, hello, in_fd, out_fd, log_fd)
  local e = ffi.new("kl_relay_end")
  local err = ffi.new("kl_err")
  if C.kl_relay_run(sock_path, hello, in_fd, out_fd, log_fd or -1, e, err) ~= 0 then
    return nil, ffi.string(err.msg)
  end
  return { kind = END_KINDS[e.kind] or "lost", code = tonumber(e.code), what = ffi.string(e.what) }
end

-- Ends this process by signal signo (no core dump), as the remote worker ended.
function M.die(signo) return C.kl_relay_die(signo) end

return M
