-- bench/worker_cost.lua: the worker's own cost of an evaluation, with the GPU's work held
-- fixed. N evaluations of TASK's own kernel (its binary compiled once), each verified as
-- the full protocol does and timed R repetitions exactly; per evaluation the worker's
-- seconds on the request (result.eval_seconds) less the timed repetitions' GPU time (the
-- sum of the samples), which is what the protocol's steps around the kernel cost: its
-- checks, copies, reloads and its Lua. Two runs of this on one machine with different Lua
-- (KLOOP_LUA_DIR) compare those steps on the same GPU work. Prints the medians and means
-- of both, and of the parent's wall per request.
-- usage: kloop bench/worker_cost.lua [TASK (kernels/gemm_tiled.lua)] [N (30)] [R (5)]
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local gpu = require("kloop.core.gpu")
local stats = require("kloop.eval.stats")
local sys = require("kloop.core.sys")

local task_path = arg[1] or "kernels/gemm_tiled.lua"
local n, reps = tonumber(arg[2]) or 30, tonumber(arg[3]) or 5
local task = assert(taskmod.load(task_path))
if not gpu.probe(0) then print("SKIP: no GPU here") os.exit(77) end
local ev = eval.new(task, {})
assert(ev:start())
local worker, over, wall, gpu_ms = {}, {}, {}, {}
for i = 0, n do
  local t0 = sys.now()
  local r = ev:evaluate(nil, { timing = { min_reps = reps, max_reps = reps, budget = 1e9, target_ci = 0 } })
  local w = sys.now() - t0
  assert(r.verdict == "ok" and #r.samples == reps, tostring(r.reason))
  if i > 0 then -- (the first: the binary's compile and the worker's first request)
    local g = 0
    for _, ms in ipairs(r.samples) do g = g + ms end
    worker[#worker + 1], wall[#wall + 1] = 1000 * r.eval_seconds, 1000 * w
    gpu_ms[#gpu_ms + 1], over[#over + 1] = g, 1000 * r.eval_seconds - g
  end
end
ev:close()
local function mean(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return s / #xs
end
print(string.format("WORKER_COST %s: %d evaluations x %d repetitions: worker %.2f ms median (mean %.2f), "
  .. "of it beside the timed kernels %.2f ms median (mean %.2f); timed kernels %.2f ms; parent's wall %.2f ms median",
  task_path, n, reps, stats.median(worker), mean(worker), stats.median(over), mean(over), stats.median(gpu_ms),
  stats.median(wall)))
