-- bench/compile_times.lua: NVRTC's time for every point of a recorded landscape
-- (bench/landscapes/gemm_tiled_h200.tsv: kernels/gemm_tiled.lua's 444 valid points), one
-- compile at a time, no cache, with the point's median time from the landscape: which
-- points compile slowly, and whether they are ever near the optimum (the compile waits
-- that keep a model search below 80% GPU busy on the slower lent machines are one heavy
-- compile alone late in a run). Writes OUT (TSV: the point, compile seconds, median ms)
-- and prints a summary. Needs NVRTC, no GPU.
-- usage: kloop bench/compile_times.lua [OUT (/tmp/compile_times.tsv)] [ARCH (sm_90)] [EVERY (1)]
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local sys = require("kloop.core.sys")

local out_path, arch, every = arg[1] or "/tmp/compile_times.tsv", arg[2] or "sm_90", tonumber(arg[3]) or 1
local task = assert(taskmod.load("kernels/gemm_tiled.lua"))
local ev = eval.new(task, { arch = arch })
local rows, i = {}, 0
for line in io.lines("bench/landscapes/gemm_tiled_h200.tsv") do
  if not line:match("^#") then
    i = i + 1
    local bm, bn, bk, tm, tn, ms = line:match("^(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)\t([%d.]+)")
    if bm and (i - 1) % every == 0 then
      rows[#rows + 1] = { p = { BM = bm, BN = bn, BK = bk, TM = tm, TN = tn }, ms = tonumber(ms),
        key = table.concat({ bm, bn, bk, tm, tn }, "\t") }
    end
  end
end
local f = assert(io.open(out_path, "w"))
f:write("# bench/compile_times.lua: NVRTC seconds per point of kernels/gemm_tiled.lua (one compile at a time, no cache, ",
  arch, "); columns: BM BN BK TM TN compile_s median_ms (the H200 landscape's)\n")
local t0 = sys.now()
for k, r in ipairs(rows) do
  local tc = sys.now()
  local copts
  local compiler
  compiler, copts = ev:compiler({ defines = r.p }, task.source)
  copts.no_cache = true
  local job = compiler.compile(task.source, copts)
  r.s = job.seconds or (sys.now() - tc)
  assert(job.ok, "point " .. r.key .. ": " .. tostring(job.log))
  f:write(string.format("%s\t%.3f\t%.4f\n", r.key, r.s, r.ms))
  if k % 50 == 0 then io.stderr:write(string.format("%d of %d, %.0f s\n", k, #rows, sys.now() - t0)) end
end
f:close()
table.sort(rows, function(a, b) return a.s > b.s end)
local best = math.huge
for _, r in ipairs(rows) do best = math.min(best, r.ms) end
local total, near, near_heavy = 0, 0, 0
for _, r in ipairs(rows) do total = total + r.s end
local cut = rows[math.max(1, math.floor(#rows / 10))].s -- (the slowest tenth)
for _, r in ipairs(rows) do
  if r.ms <= 1.02 * best then
    near = near + 1
    if r.s >= cut then near_heavy = near_heavy + 1 end
  end
end
print(string.format("COMPILE_TIMES: %d points, %.1f s in all, median %.2f s, slowest tenth from %.2f s, slowest %.2f s (%s)",
  #rows, total, rows[math.floor(#rows / 2) + 1].s, cut, rows[1].s, rows[1].key:gsub("\t", " ")))
print(string.format("  within 2%% of the optimum (%.4f ms): %d points, %d of them in the slowest tenth", best, near, near_heavy))
for k = 1, math.min(8, #rows) do
  print(string.format("  %-22s %6.2f s  %8.4f ms (%.2fx the optimum)", rows[k].key:gsub("\t", " "), rows[k].s, rows[k].ms,
    rows[k].ms / best))
end
