-- tests/gpu/promote.lua: `kloop promote` on the GPU (label gpu): the best of a short tune
-- run on kernels/gemm_tiled.lua is promoted against the run's baseline (ratio, CI and
-- the time a promotion takes), and two kernels that pass verification are refused by
-- compute-sanitizer: one reads one element out of bounds (memcheck), one has a
-- shared-memory race (racecheck). Prints a table; exits 1 when an outcome is wrong.
local core = require("kloop.core.api")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local store = require("kloop.store.db")
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local promote = require("kloop.eval.promote")
local sanitize = require("kloop.eval.sanitize")

local dir = os.tmpname()
os.remove(dir)
assert(util.mkdir_p(dir))
local dbpath = dir .. "/promote.db"
local exe = sys.exe_path() or "build/kloop"
local budget = tonumber(os.getenv("KLOOP_PROMOTE_BUDGET") or "") or 40
local t0 = sys.now()
local rc = os.execute(string.format("KLOOP_DB=%s %s tune kernels/gemm_tiled.lua --budget %d --seed 1 --promote off --quiet > %s/tune.log 2>&1",
  util.shell_quote(dbpath), util.shell_quote(exe), budget, dir))
if rc ~= 0 and rc ~= true then print(util.read_file(dir .. "/tune.log")) error("the tune run failed") end
local tune_s = sys.now() - t0
local db = assert(store.open(dbpath))
local best = assert(db:best(1))
local rows, failures = {}, 0
local function row(what, r, want, note)
  local ok = r.state == want
  if not ok then failures = failures + 1 end
  rows[#rows + 1] = { what, r.state, r.ratio and promote.ratio_text(r.ratio, r.ratio_ci) or "-",
    string.format("%.1f s", r.seconds or 0), ok and "ok" or ("WANT " .. want), note or r.reason }
end

local r = assert(promote.run(db, best.id, { quiet = true }))
row("gemm_tiled tune best c:" .. best.id, r, "promoted")

-- the CUDA vadd task: the right kernel, then the two the sanitizer must refuse
local task = assert(taskmod.load("tests/promote/vadd_cuda.cu"))
local run = assert(db:begin_run({ task_name = task.name, task_path = "tests/promote/vadd_cuda.cu" }))
local ev = evaluator.new(task, { timing = { budget = 0.5 } })
for _, name in ipairs({ "vadd_cuda.cu", "vadd_cuda_oob.cu", "vadd_cuda_race.cu" }) do
  local src = assert(util.read_file("tests/promote/" .. name))
  local id = assert(db:add_candidate(run, { source = src, name = name,
    proposer = name == "vadd_cuda.cu" and "baseline" or "user" }))
  local e = ev:evaluate(src)
  assert(db:add_evaluation(id, e))
  if e.verdict ~= "ok" then print(name .. " does not pass verification: " .. tostring(e.reason)) failures = failures + 1 end
end
ev:close()
for _, x in ipairs({ { "vadd_cuda_oob.cu", "memcheck" }, { "vadd_cuda_race.cu", "racecheck" } }) do
  -- the sanitizer step alone (the A/B run against an equal baseline would refuse anyway)
  local t1 = sys.now()
  local s = sanitize.cuda(task, { source = util.read_file("tests/promote/" .. x[1]) }, { secret = "gpu-test" })
  local quoted, guards = "", "?"
  for _, tool in ipairs(s.evidence and s.evidence.tools or {}) do
    guards = tool.guard_zones
    if tool.tool == x[2] then quoted = table.concat(tool.quote or {}, " | ") end
  end
  local res = { state = s.status == "failed" and "refused" or s.status, seconds = sys.now() - t1 }
  row(x[1] .. " (" .. x[2] .. ")", res, "refused",
    string.format("%s; guard zones %s; quoted: %s", tostring(s.reason), tostring(guards), quoted:sub(1, 400)))
end
db:close()

print(string.format("tune: %d candidates in %.0f s; best c:%d %s", budget, tune_s, best.id, util.fmt_ms(best.evaluation.median_ms)))
local w = { 0, 0, 0, 0, 0 }
for _, x in ipairs(rows) do for i = 1, 5 do w[i] = math.max(w[i], #x[i]) end end
local fmt = string.format("%%-%ds  %%-%ds  %%-%ds  %%-%ds  %%-%ds  %%s", w[1], w[2], w[3], w[4], w[5])
for _, x in ipairs(rows) do print(string.format(fmt, x[1], x[2], x[3], x[4], x[5], x[6])) end
os.execute("rm -rf " .. util.shell_quote(dir))
if failures > 0 then print("FAIL: " .. failures .. " outcome(s) wrong") os.exit(1) end
print("PASS")
