-- bench/clock_reads.lua: whether reading NVML's clocks while a timed repetition runs
-- (kloop.worker.protocol time_interleaved: during the first and the last repetition)
-- moves those repetitions' times. N evaluations of TASK's own kernel, each timed R
-- repetitions exactly; per evaluation every repetition's time over the median of its
-- repetitions 2..R-1 (untouched), then per position the mean of those ratios with a 95%
-- CI over the evaluations. A read that slowed its repetition would show at positions 1
-- and R against 2 and R-1. Run it on a commit that reads the clocks outside the timing
-- (KLOOP_LUA_DIR) for the same table with no read inside.
-- usage: kloop bench/clock_reads.lua [TASK (kernels/stencil.lua)] [N (20)] [R (20)]
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local gpu = require("kloop.core.gpu")
local stats = require("kloop.eval.stats")

local task_path = arg[1] or "kernels/stencil.lua"
local n, reps = tonumber(arg[2]) or 20, tonumber(arg[3]) or 20
local task = assert(taskmod.load(task_path))
if not gpu.probe(0) then print("SKIP: no GPU here") os.exit(77) end
local ev = eval.new(task, {})
assert(ev:start())
local ratios = {}
for k = 1, reps do ratios[k] = {} end
local clocks = 0
for _ = 1, n do
  local r = ev:evaluate(nil, { timing = { min_reps = reps, max_reps = reps, budget = 1e9, target_ci = 0 } })
  assert(r.verdict == "ok" and #r.samples == reps, tostring(r.reason))
  if r.clocks and r.clocks.after then clocks = clocks + 1 end
  local mid = {}
  for k = 2, reps - 1 do mid[#mid + 1] = r.samples[k] end
  local m = stats.median(mid)
  for k = 1, reps do ratios[k][#ratios[k] + 1] = r.samples[k] / m end
end
ev:close()
print(string.format("%s: %d evaluations x %d repetitions, clocks on %d", task_path, n, reps, clocks))
for _, k in ipairs({ 1, 2, 3, math.floor(reps / 2), reps - 2, reps - 1, reps }) do
  local xs = ratios[k]
  local s, sq = 0, 0
  for _, x in ipairs(xs) do s, sq = s + x, sq + x * x end
  local mean = s / #xs
  local sd = math.sqrt(math.max(sq / #xs - mean * mean, 0) * #xs / math.max(#xs - 1, 1))
  print(string.format("  repetition %2d: %.4f +- %.4f (times over the untouched median)", k, mean, 1.96 * sd / math.sqrt(#xs)))
end
