-- bench/compile_scaling.lua: how NVRTC's compile latency and throughput scale with the
-- number of compilers running at once, on this machine's cores: for each PARALLEL level,
-- the same 32 kernels/gemm_tiled.lua variants (points of the recorded landscape, a
-- nonce so no cache holds them) compiled by kloop.eval.compile.run; prints wall time,
-- binaries per second and the mean and max seconds of one compile.
-- usage: kloop bench/compile_scaling.lua [LEVELS (1,2,4,8,12,16)] [ARCH (sm_90)] [REPEATS (1)]
local compile = require("kloop.eval.compile")
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local levels = util.split(arg[1] or "1,2,4,8,12,16", ",")
local task = assert(taskmod.load("kernels/gemm_tiled.lua"))
local ev = eval.new(task, {})
ev.arch = arg[2] or "sm_90"
local points = {}
for line in io.lines("bench/landscapes/gemm_tiled_h200.tsv") do
  if not line:match("^#") then
    local bm, bn, bk, tm, tn = line:match("^(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)")
    if bm then points[#points + 1] = { BM = bm, BN = bn, BK = bk, TM = tm, TN = tn } end
  end
end
print(string.format("cpus %d, %d points", sys.cpu_count(), #points))
print(string.format("%-9s %6s %8s %10s %10s %10s", "parallel", "jobs", "wall s", "per s", "mean s", "max s"))
-- every level compiles the same points (the first n of a fixed spread over the
-- landscape), so the levels differ only in how many compilers run at once
local spread = {}
for k = 1, 64 do spread[k] = points[(k * 37) % #points + 1] end
local repeats = tonumber(arg[3]) or 1
for _, l in ipairs(levels) do
 for _ = 1, repeats do
  local p = tonumber(l)
  local n = 32
  local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
  local jobs = {}
  for i = 1, n do
    local d = {}
    for k, v in pairs(spread[(i - 1) % #spread + 1]) do d[k] = v end
    d.KLOOP_BENCH_NONCE = nonce
    for _, j in ipairs(ev:compile_jobs({ defines = d })) do jobs[#jobs + 1] = j end
  end
  local t0 = sys.now()
  compile.run(jobs, { parallel = p })
  local wall = sys.now() - t0
  local sum, max, bad = 0, 0, 0
  for _, j in ipairs(jobs) do
    sum, max = sum + (j.seconds or 0), math.max(max, j.seconds or 0)
    if not j.ok then bad = bad + 1 end
  end
  print(string.format("%-9d %6d %8.2f %10.2f %10.3f %10.3f%s", p, #jobs, wall, #jobs / wall, sum / #jobs, max,
    bad > 0 and ("  (" .. bad .. " failed)") or ""))
 end
end
