-- bench/mpi_overhead.lua: seconds per evaluation through a remote worker (kloop-mpi's
-- relay: proxy, Unix socket, rank 0, MPI, the worker's rank) against a local worker, on
-- the same candidates, evaluated one at a time, alternating, so both see the same load.
-- usage: mpirun -n 2 kloop-mpi bench/mpi_overhead.lua TASK [ROUNDS] (kloop-mpi adds --remote-workers S)
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local stats = require("kloop.eval.stats")
local sys = require("kloop.core.sys")

local pos, sock = {}, nil
local i = 1
while arg[i] do
  if arg[i] == "--remote-workers" then sock = arg[i + 1]:match("^[^,]+") i = i + 1 else pos[#pos + 1] = arg[i] end
  i = i + 1
end
local task = assert(taskmod.load(assert(pos[1], "usage: ... TASK [ROUNDS]")))
local rounds = tonumber(pos[2] or "3")
local points = { { TI = 16, TJ = 128, TK = 32 }, { TI = 64, TJ = 32, TK = 32 }, { TI = 32, TJ = 64, TK = 64 },
  { TI = 8, TJ = 256, TK = 16 } }
local timing = { budget = 0.02 }
local evs = { ["local"] = evaluator.new(task, { timing = timing }),
  remote = evaluator.new(task, { timing = timing, worker_argv = { sys.exe_path(), "--worker-remote", sock, task.backend } }) }
local secs = { ["local"] = {}, remote = {} }
for _, ev in pairs(evs) do assert(ev:evaluate().verdict == "ok") end -- start both workers, measure the baseline
for _ = 1, rounds do
  for _, p in ipairs(points) do
    for _, way in ipairs({ "local", "remote" }) do
      local t0 = sys.now()
      local r = evs[way]:evaluate(nil, { defines = p, timing = timing })
      assert(r.verdict == "ok", way .. ": " .. tostring(r.verdict) .. " " .. tostring(r.reason))
      secs[way][#secs[way] + 1] = sys.now() - t0
    end
  end
end
for _, ev in pairs(evs) do ev:close() end
local ml, mr = stats.median(secs["local"]), stats.median(secs.remote)
print(string.format("evaluations: %d each way (%d points x %d rounds)", #secs.remote, #points, rounds))
print(string.format("local worker:  %.3f s per evaluation (median)", ml))
print(string.format("remote worker: %.3f s per evaluation (median)", mr))
print(string.format("MPI overhead:  %+.1f ms per evaluation (%+.1f%%)", (mr - ml) * 1e3, (mr / ml - 1) * 100))
