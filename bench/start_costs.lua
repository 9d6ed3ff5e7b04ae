-- bench/start_costs.lua: what a run pays before its first candidate, on the GPU: the
-- forked GPU probe, then an evaluator's start step by step (spawn and hello, the
-- reference's compile, kloop's own kernels, the set-up, the ceilings), for each TASK.
-- usage: kloop bench/start_costs.lua TASK...   (KLOOP_CACHE decides what is compiled;
-- NO_HINT=1: the evaluator is not given the probe's arch, as before)
local sys = require("kloop.core.sys")
local gpu = require("kloop.core.gpu")
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local t0 = sys.now()
local g = gpu.probe(0)
if not g then print("SKIP: no GPU here") os.exit(77) end
print(string.format("probe: %.3f s (%s)", sys.now() - t0, g.name))
for _, path in ipairs(arg) do
  local task = assert(taskmod.load(path))
  local t1 = sys.now()
  -- (the probe's arch, as the driver gives it: the first compiles start before the hello)
  local ev = eval.new(task, { gpu_hint = os.getenv("NO_HINT") == nil and g or nil })
  assert(ev:start())
  local parts = {}
  for k, v in pairs(ev.start_parts or (ev.w and ev.w.start_parts) or {}) do parts[#parts + 1] = string.format("%s %.3f", k, v) end
  table.sort(parts)
  print(string.format("start %s: %.3f s: %s", path, sys.now() - t1, table.concat(parts, ", ")))
  local t2 = sys.now()
  ev:close()
  print(string.format("close %s: %.3f s", path, sys.now() - t2))
end
