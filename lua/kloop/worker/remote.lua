-- kloop.worker.remote: `kloop --worker-remote SOCK BACKEND`, a worker that runs elsewhere.
-- The driver spawns this in place of `kloop --worker BACKEND` and talks to it on fds 3/4
-- as to any worker; the frames travel through SOCK (a kloop-mpi socket) to the rank that
-- runs the real worker, whose output comes back on our stderr (the driver keeps its tail
-- for crash messages) and whose end we mirror: its exit status, or its signal. A lost
-- connection (its rank died) exits 70, which the driver sees as a crashed worker.
local relay = require("kloop.core.relay")
local worker_client = require("kloop.eval.worker_client")

local M = {}

M.LOST_STATUS = 70 -- EX_SOFTWARE: the connection ended without the worker's end
-- The line a lost connection leaves in the output tail: the driver's sign that the
-- worker's host failed, not the candidate (kloop.eval.worker_client).
M.LOST_MARK = "kloop --worker-remote: connection lost: "

-- The first line on the socket: which backend, and which variables the far side may
-- pass to the worker (the same allow-lists as a local worker's).
function M.hello(backend)
  local keep = backend == "host" and worker_client.host_worker_env or worker_client.worker_env
  return string.format("kloop-relay 1 %s %s\n", backend, table.concat(keep, ","))
end

local function say(msg) io.stderr:write("kloop --worker-remote: ", msg, "\n") end

function M.main(args)
  local sock, backend = args[1], args[2] or "cuda"
  if not sock or sock == "" or not backend:match("^[%w_]+$") then
    say("usage: kloop --worker-remote SOCKET BACKEND")
    return 2
  end
  local e, err = relay.run(sock, M.hello(backend), 3, 4, 2)
  if not e then
    io.stderr:write(M.LOST_MARK, err, "\n")
    return M.LOST_STATUS
  end
  if e.kind == "exited" then
    if e.code ~= 0 then say(e.what) end
    return e.code
  elseif e.kind == "signaled" then
    say(e.what)
    io.stderr:flush()
    relay.die(e.code)
  end
  io.stderr:write(M.LOST_MARK, e.what, "\n")
  return M.LOST_STATUS
end

return M
