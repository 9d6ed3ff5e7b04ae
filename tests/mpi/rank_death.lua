-- tests/mpi/rank_death.lua: a worker rank killed (kill -9 of its kloop-mpi process) while
-- its worker evaluates: the proxy's channel closes soon (the evaluation is a crash, not a
-- hang to its deadline), a new connection to the dead rank's slot fails at once, and the
-- other rank's worker goes on.
-- usage: mpirun -n 3 kloop-mpi [--rank-timeout S] tests/mpi/rank_death.lua TASK (2 ranks x 1 worker)
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local remote = require("kloop.worker.remote")

local task_path, socks = nil, nil
local i = 1
while arg[i] do
  if arg[i] == "--remote-workers" then socks = arg[i + 1] i = i + 1 else task_path = arg[i] end
  i = i + 1
end
assert(socks and task_path, "usage: kloop tests/mpi/rank_death.lua TASK --remote-workers S1,S2")
local list = {}
for s in socks:gmatch("[^,]+") do list[#list + 1] = s end
assert(#list == 2, "two worker slots wanted, got " .. #list)
local task = assert(taskmod.load(task_path))

local failures = 0
local function check(cond, what)
  print((cond and "ok   " or "FAIL ") .. what)
  if not cond then failures = failures + 1 end
end

-- the kloop-mpi process of MPI rank r (Open MPI says which in its environment)
local function rank_pid(r)
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    local f = pid:match("^%d+$") and io.open("/proc/" .. pid .. "/environ", "rb")
    local env = f and f:read("*a") or ""
    if f then f:close() end
    local c = f and io.open("/proc/" .. pid .. "/cmdline", "rb")
    local cmd = c and c:read("*a") or ""
    if c then c:close() end
    if (cmd:match("^[^%z]*") or ""):match("kloop%-mpi$") and env:find("\0OMPI_COMM_WORLD_RANK=" .. r .. "\0", 1, true) then
      p:close()
      return pid
    end
  end
  p:close()
end

local evs = {}
for k, s in ipairs(list) do
  evs[k] = evaluator.new(task, { timing = { budget = 0.02 }, worker_argv = { sys.exe_path(), "--worker-remote", s, "host" } })
  local r = evs[k]:evaluate()
  check(r.verdict == "ok", string.format("worker %d (%s): baseline %s", k, s:match("[^/]+$"), r.verdict))
end
local victim = rank_pid(2)
check(victim ~= nil, "found rank 2's process: " .. tostring(victim))
-- kill rank 2 while its worker is busy (a candidate that never returns: only the lost
-- rank can end this evaluation before its deadline)
os.execute(string.format("(sleep 0.5; kill -9 %s) &", victim or "0"))
local t0 = sys.now()
local r = evs[2]:evaluate(assert(util.read_file("tests/adversarial/host/spin_forever.c")))
local dt = sys.now() - t0
check(r.verdict ~= "ok" and r.verdict ~= "timeout", string.format("rank 2 killed mid-evaluation: %s after %.1f s (%s)",
  r.verdict, dt, tostring(r.reason)))
check((r.output_tail or ""):find(remote.LOST_MARK, 1, true) ~= nil, "the output tail says the connection was lost")
check(dt < 4.5, "the loss was noticed before the deadline")
t0 = sys.now()
local again = evs[2]:evaluate()
check(again.verdict ~= "ok" and sys.now() - t0 < 2, string.format("a new connection to the dead slot fails at once: %s in %.2f s (%s)",
  again.verdict, sys.now() - t0, tostring(again.reason or again.error)))
local other = evs[1]:evaluate()
check(other.verdict == "ok", "rank 1's worker goes on: " .. other.verdict)
for _, ev in ipairs(evs) do ev:close() end
print(failures == 0 and "rank_death: all checks passed" or ("rank_death: " .. failures .. " checks failed"))
os.exit(failures == 0 and 0 or 1)
