-- bench/start_contention.lua: does the driver's GPU probe (a forked child's cuInit) slow
-- the prespawned worker's start beside it? For N rounds, alternated: a worker prespawned
-- and started alone, then one with gpu.probe(0) run right after its prespawn (as the
-- driver does). Prints each start's steps (ev.start_parts) and the hello's wall time
-- from the prespawn. usage: kloop bench/start_contention.lua [N] [TASK]
local eval = require("kloop.eval.evaluator")
local gpu = require("kloop.core.gpu")
local sys = require("kloop.core.sys")
local n = tonumber(arg[1]) or 3
local task = assert(require("kloop.eval.task").load(arg[2] or "kernels/saxpy.lua"))
if not gpu.probe(0) then print("SKIP: no GPU here") os.exit(77) end
local sums = {}
for i = 1, n do
  for _, mode in ipairs({ "alone", "probe" }) do
    local ev = eval.new(task, {})
    local t0 = sys.now()
    assert(ev:prespawn(gpu.arch_hint(0)))
    local tp = 0
    if mode == "probe" then
      local a = sys.now()
      assert(gpu.probe(0))
      tp = sys.now() - a
    end
    assert(ev:start())
    local wall = sys.now() - t0
    local parts = {}
    for k, v in pairs(ev.start_parts or {}) do parts[#parts + 1] = string.format("%s %.3f", k, v) end
    table.sort(parts)
    print(string.format("START %d %-5s probe %.3f s, start %.3f s from the prespawn: %s", i, mode, tp, wall,
      table.concat(parts, ", ")))
    sums[mode] = (sums[mode] or 0) + wall
    ev:close()
  end
end
print(string.format("CONTENTION: mean start from the prespawn, alone %.3f s, beside the probe %.3f s (%d rounds)",
  sums.alone / n, sums.probe / n, n))
