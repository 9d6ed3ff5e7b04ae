-- bench/eval_throughput.lua: gemm-class candidates fully verified and timed per minute
-- on one GPU (target >= 60/min on an H200). Candidates are distinct tiled-gemm variants
-- (each compiles for real), compiled in parallel first, then evaluated one by one.
-- usage: kloop bench/eval_throughput.lua [COUNT]
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local compile = require("kloop.eval.compile")
local util = require("kloop.util")
local core = require("kloop.core.ffi")
local C = core.C

if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local count = tonumber(arg[1]) or 40
local task = assert(taskmod.load("kernels/gemm.cu"))
local base = assert(util.read_file("kernels/gemm_tiled.cu"))

local combos = {}
for _, bm in ipairs({ 64, 128 }) do for _, bn in ipairs({ 64, 128 }) do for _, bk in ipairs({ 8, 16 }) do
  for _, tm in ipairs({ 4, 8 }) do for _, tn in ipairs({ 4, 8 }) do
    local threads = (bm / tm) * (bn / tn)
    if threads >= 64 and threads <= 1024 then combos[#combos + 1] = { BM = bm, BN = bn, BK = bk, TM = tm, TN = tn } end
  end end
end end end
local cands = {}
for i = 1, count do
  cands[i] = { src = "// variant " .. i .. "\n" .. base, defines = combos[(i - 1) % #combos + 1] }
end

local t0 = C.kl_now()
local ev = eval.new(task, { timing = { budget = 1.0 } })
assert(ev:start())
local t_setup = C.kl_now() - t0
local jobs = {}
for i, c in ipairs(cands) do
  jobs[i] = assert(compile.prepare(c.src, { arch = ev.arch, dir = task.dir, defines = c.defines, name = "v" .. i .. ".cu" }))
end
local t1 = C.kl_now()
compile.run(jobs, { parallel = 16 })
local t_compile = C.kl_now() - t1
local verdicts, best = {}, nil
local t2 = C.kl_now()
for i, c in ipairs(cands) do
  local r = ev:evaluate(c.src, { defines = c.defines, name = "v" .. i .. ".cu" })
  verdicts[r.verdict] = (verdicts[r.verdict] or 0) + 1
  if r.verdict == "ok" and (not best or r.time_ms < best.time_ms) then best = r best.defines = c.defines end
end
local t_eval = C.kl_now() - t2
ev:close()
local total = t_compile + t_eval
local vs = {}
for k, v in pairs(verdicts) do vs[#vs + 1] = k .. "=" .. v end
print(string.format("setup (reference at 4096^3, 2 input sets): %.1f s", t_setup))
print(string.format("compile %d candidates, 16 in parallel: %.1f s", count, t_compile))
print(string.format("evaluate %d candidates: %.1f s (%s)", count, t_eval, table.concat(vs, " ")))
print(string.format("THROUGHPUT: %.1f candidates/min (compile + verify + time, setup excluded)", count / total * 60))
if best then
  local d = best.defines
  print(string.format("best: BM=%d BN=%d BK=%d TM=%d TN=%d  %.3f ms  %.2f TFLOP/s", d.BM, d.BN, d.BK, d.TM, d.TN,
    best.time_ms, best.tflops))
end
