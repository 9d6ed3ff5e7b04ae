-- tests/spec/eval_spec.lua: the parent-side evaluator's defences that need no worker:
-- deadlines derived from the work, static device data refused, and the sentinel.
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local compile = require("kloop.eval.compile")
local util = require("kloop.util")

local function gemm_task()
  return assert(taskmod.load("kernels/gemm.lua"))
end

describe("kloop.eval deadlines", function()
  it("uses a fixed default before the first verified evaluation", function()
    local ev = eval.new(gemm_task())
    local s, src = ev:deadline("evaluate", { budget = 1 })
    assert.are.equal(eval.DEADLINE_FIRST, s)
    assert.matches("first evaluation", src)
  end)

  it("derives seconds, not minutes, from the naive gemm's measured time", function()
    local ev = eval.new(gemm_task())
    ev.work_ref = { ms = 275.8 } -- the naive 4096^3 gemm on the H200
    local s, src = ev:deadline("evaluate", { budget = 1 })
    assert.is_true(s > 5 and s < 30, "deadline " .. s)
    assert.matches("the baseline's 275%.800 ms", src)
    local c = ev:deadline("compare", { budget = 1 })
    assert.is_true(c > s)
    local p = ev:deadline("profile", { budget = 1 })
    assert.is_true(p > s)
  end)

  it("gives a screen a smaller deadline than a full evaluation (one size, no timing budget)", function()
    local ev = eval.new(gemm_task())
    ev.work_ref = { ms = 275.8 }
    local full = ev:deadline("evaluate", { budget = 1 })
    local screen, src = ev:deadline("screen", { min_reps = 3, max_reps = 3, budget = 0 })
    assert.is_true(screen < full, string.format("screen %.1f s, full %.1f s", screen, full))
    assert.is_true(screen > eval.DEADLINE_FLOOR)
    assert.matches("0.0 s of timing", src, 1, true)
    -- both stages in one request: the full work and the screen's repetitions
    local both = ev:deadline("cascade", { budget = 1 }, { min_reps = 3, max_reps = 3, budget = 0 })
    assert.is_true(both > full, string.format("cascade %.1f s, full %.1f s", both, full))
    -- the cheapest check size by the cost model
    assert.is_not_true(ev:screen_case().bench)
    assert.are_not.equal("bench", ev:screen_case().label)
  end)

  it("scales with the work: a kernel ten times slower gets a longer deadline", function()
    local ev = eval.new(gemm_task())
    ev.work_ref = { ms = 1 }
    local fast = ev:deadline("evaluate", { budget = 1 })
    ev.work_ref = { ms = 1000 }
    local slow = ev:deadline("evaluate", { budget = 1 })
    assert.is_true(slow > 10 * (fast - eval.DEADLINE_FLOOR - 2))
  end)

  it("lets the run's --deadline and the task's deadline win, and says so", function()
    local task = gemm_task()
    task.deadline = 7
    local ev = eval.new(task)
    ev.work_ref = { ms = 1 }
    local s, src = ev:deadline("evaluate")
    assert.are.equal(7, s)
    assert.matches("task's deadline", src)
    ev = eval.new(task, { deadline = 3 })
    s, src = ev:deadline("evaluate")
    assert.are.equal(3, s)
    assert.matches("%-%-deadline", src)
  end)
end)

describe("kloop.eval static device data", function()
  local BIG = [[
__device__ float stash[1 << 21];
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M * N) { stash[i % (1 << 21)] = A[0]; C[i] = stash[0] + B[0] * K; }
}
]]

  it("reads the size of __device__ data from a cubin", function()
    local job = compile.compile(BIG, { arch = "sm_90", name = "big.cu" })
    assert.is_true(job.ok, job.log)
    local bytes = assert(compile.static_data_bytes(util.read_file(job.cubin_path)))
    assert.are.equal(8 * 2^20, bytes)
    local small = compile.compile((BIG:gsub("1 << 21", "16")), { arch = "sm_90", name = "small.cu" })
    assert.are.equal(64, compile.static_data_bytes(util.read_file(small.cubin_path)))
    assert.is_nil((compile.static_data_bytes("not an elf image at all, long enough to pass the size check ..........")))
  end)

  it("refuses a candidate with more than the task allows, and names the field", function()
    local ev = eval.new(gemm_task())
    ev.arch = "sm_90"
    ev.gpu = { arch = "sm_90", sm_count = 132, clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 }
    local req, failed = ev:prepare(BIG, { name = "big.cu" })
    assert.is_nil(req)
    assert.are.equal("rejected", failed.verdict)
    assert.matches("8%.00 MiB of static __device__ data", failed.reason)
    assert.matches("static_data = 8388608", failed.reason)
    ev.task.static_data = 16 * 2^20
    req = ev:prepare(BIG, { name = "big.cu" })
    assert.is_table(req)
  end)

  it("judges a fresh binary by the compiler's bytes as a cached one by its file", function()
    -- (a source no cache has seen: compiled now, its facts taken as the compiler ends and
    -- kept by key; then the same key found again, and one whose facts this process never
    -- learnt, which reads the file and the log back)
    local sys = require("kloop.core.sys")
    local tag = "\n// static data spec " .. sys.hex64(sys.hash64(assert(sys.random_bytes(8)))) .. "\n"
    local fresh = compile.compile(BIG .. tag, { arch = "sm_90", name = "big.cu" })
    assert.is_true(fresh.ok, fresh.log)
    assert.is_false(fresh.cached)
    assert.are.equal(8 * 2^20, fresh.image_facts.static_data_bytes)
    assert.are.equal(compile.image_id(util.read_file(fresh.cubin_path)), fresh.image_facts.id)
    local again = compile.compile(BIG .. tag, { arch = "sm_90", name = "big.cu" })
    assert.is_true(again.cached)
    assert.are.equal(fresh.image_facts, again.image_facts)
    assert.are.equal(fresh.log, again.log)
    assert.are.same(fresh.resources, again.resources)
    -- (each job its own resources: one changed reaches neither the facts nor the next)
    local entry = next(again.resources)
    assert.is_string(entry)
    again.resources[entry].registers = -1
    assert.are_not.equal(-1, compile.compile(BIG .. tag, { arch = "sm_90", name = "big.cu" }).resources[entry].registers)
    local function judged()
      local ev = eval.new(gemm_task(), { compile_background = false })
      ev.arch = "sm_90"
      ev.gpu = { arch = "sm_90", sm_count = 132, clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 }
      local req, failed, job = ev:prepare(BIG .. tag, { name = "big.cu" })
      assert.is_nil(req)
      assert.matches("8%.00 MiB of static __device__ data", failed.reason)
      return job
    end
    assert.is_table(judged().image_facts)
    compile.forget_facts()
    assert.is_nil(judged().image_facts)
    -- (a binary gone from the cache is not taken for compiled, facts or not)
    local gone = compile.compile(BIG .. tag .. "// gone\n", { arch = "sm_90", name = "big.cu" })
    assert.is_true(gone.ok, gone.log)
    os.remove(gone.cubin_path)
    local back = compile.compile(BIG .. tag .. "// gone\n", { arch = "sm_90", name = "big.cu" })
    assert.is_true(back.ok, back.log)
    assert.is_false(back.cached)
    assert.is_true(util.file_exists(back.cubin_path))
  end)
end)

describe("kloop.eval sentinel", function()
  -- A scripted worker: submit answers from a table; the sentinel's verify-only request
  -- is told apart by its extra field.
  local function scripted(answers)
    local ev = eval.new(gemm_task())
    ev.calls = {}
    ev.submit = function(self, op, src, opts, extra)
      local key = (extra and extra.verify_only) and "sentinel" or src
      self.calls[#self.calls + 1] = key
      local a = answers[key]
      local r = type(a) == "function" and a(self) or a
      local out = {}
      for k, v in pairs(r) do out[k] = v end
      return out
    end
    ev.kill = function(self) self.killed = (self.killed or 0) + 1 end
    ev.derive = function(self, r) return r end
    return ev
  end

  it("re-verifies the best candidate after a streak of failed verifications", function()
    local ev = scripted({ good = { verdict = "ok", time_ms = 2 }, bad = { verdict = "wrong" }, sentinel = { verdict = "ok" } })
    ev:evaluate("good")
    for _ = 1, eval.SENTINEL_STREAK do ev:evaluate("bad") end
    assert.are.equal("sentinel", ev.calls[#ev.calls])
    assert.are.equal(1, ev.sentinel_runs)
    assert.is_nil(ev.killed)
  end)

  it("counts only full verifications: screens neither run it nor become the known-good candidate", function()
    local ev = scripted({ fast = { verdict = "ok", time_ms = 1 }, good = { verdict = "ok", time_ms = 2 },
      bad = { verdict = "wrong" }, sentinel = { verdict = "ok" } })
    for _ = 1, eval.SENTINEL_EVERY * 2 do ev:screen("fast") end
    for _ = 1, eval.SENTINEL_STREAK * 2 do ev:screen("bad") end
    assert.is_nil(ev.sentinel_runs)
    assert.is_nil(ev.sentinel)
    ev:evaluate("good")
    assert.are.equal("good", ev.sentinel.src)
    for _ = 1, eval.SENTINEL_STREAK do ev:evaluate("bad") end
    assert.are.equal(1, ev.sentinel_runs)
  end)

  it("runs every SENTINEL_EVERY candidates", function()
    local ev = scripted({ good = { verdict = "ok", time_ms = 2 }, sentinel = { verdict = "ok" } })
    for _ = 1, eval.SENTINEL_EVERY * 2 do ev:evaluate("good") end
    assert.are.equal(2, ev.sentinel_runs)
  end)

  it("restarts the worker and evaluates again what it judged since the last good sentinel", function()
    local poisoned = true
    local ev = scripted({
      good = { verdict = "ok", time_ms = 2 },
      -- while the worker is poisoned, correct kernels come out wrong
      other = function() return poisoned and { verdict = "wrong" } or { verdict = "ok", time_ms = 1.5 } end,
      sentinel = function() return poisoned and { verdict = "wrong" } or { verdict = "ok" } end,
    })
    local told = {}
    ev.opts.on_reevaluate = function(r) told[#told + 1] = r end
    ev:evaluate("good")
    local results = {}
    for i = 1, eval.SENTINEL_STREAK - 1 do results[i] = ev:evaluate("other") end
    ev.kill = function(self) poisoned = false self.killed = (self.killed or 0) + 1 end
    results[#results + 1] = ev:evaluate("other") -- the streak's last: the sentinel runs and trips
    assert.are.equal(1, ev.sentinel_trips)
    assert.are.equal(1, ev.killed)
    -- the same tables the caller holds now carry the new verdicts
    for _, r in ipairs(results) do
      assert.are.equal("ok", r.verdict)
      assert.are.equal("wrong", r.reevaluated.previous.verdict)
    end
    assert.are.equal(#results + 1, #told) -- "good" was judged since the last sentinel too
  end)

  -- a re-evaluation that meets kloop's own failure (a compile cache that cannot keep a
  -- binary) leaves the results as they were; the driver stops on the evaluator's flag
  it("keeps the results when a re-evaluation meets a compile cache failure", function()
    local poisoned, cache_full = true, false
    local full = { verdict = "launch_error", infrastructure = true, cache_error = true, reason = "full" }
    local ev = scripted({
      good = function() return cache_full and full or { verdict = "ok", time_ms = 2 } end,
      other = function()
        if cache_full then return { verdict = "launch_error", infrastructure = true, cache_error = true, reason = "full" } end
        return poisoned and { verdict = "wrong" } or { verdict = "ok", time_ms = 1.5 }
      end,
      sentinel = function() return poisoned and { verdict = "wrong" } or { verdict = "ok" } end,
    })
    local told = {}
    ev.opts.on_reevaluate = function(r) told[#told + 1] = r end
    local good = ev:evaluate("good")
    local results = {}
    for i = 1, eval.SENTINEL_STREAK - 1 do results[i] = ev:evaluate("other") end
    ev.kill = function() poisoned = false end
    local answers_good = ev.submit
    ev.submit = function(self, op, src, opts, extra)
      -- (after the restart, every compile fails: the disk filled up)
      if not (extra and extra.verify_only) and self.sentinel_trips then cache_full = true end
      return answers_good(self, op, src, opts, extra)
    end
    results[#results + 1] = ev:evaluate("other")
    assert.are.equal(1, ev.sentinel_trips)
    assert.are.equal("ok", good.verdict, "a good result was overwritten by kloop's own failure")
    assert.are.equal(2, good.time_ms)
    assert.is_nil(good.reevaluated)
    assert.are.equal(0, #told)
  end)
end)

describe("implicit parameters (a task that declares none still has something to tune)", function()
  local tune = require("kloop.search.tune")

  it("offers block shapes, a register cap and fast math for a CUDA task", function()
    local task = gemm_task()
    local p = tune.implicit_params(task)
    local has = {}
    for _, b in ipairs(p.kloop_block) do has[b] = true end
    assert.is_true(has["32x32"] and has["16x16"]) -- the task's own shape is among them
    assert.is_true(#p.kloop_block > 5)
    assert.are.same({ 0, 32, 64, 128 }, p.kloop_maxrreg)
    assert.are.same({ 0, 1 }, p.kloop_fast_math)
    local space = tune.space(task)
    assert.is_true(space.implicit)
    assert.are.equal(#p.kloop_block * 4 * 2, space.size)
    -- none for a host task
    local host = assert(taskmod.load("examples/cpu/sgemm.c"))
    assert.are.equal(0, tune.space(host).size)
  end)

  it("turns them into a launch plan and compiler options, never -D defines", function()
    local plain, options, block = eval.split_implicit({ kloop_block = "16x16", kloop_maxrreg = 64, kloop_fast_math = 1, BM = 8 })
    assert.are.same({ BM = 8 }, plain)
    assert.are.same({ 16, 16 }, block)
    table.sort(options)
    assert.are.same({ "--maxrregcount=64", "--use_fast_math" }, options)
    local ev = eval.new(gemm_task())
    ev.arch = "sm_90"
    ev.gpu = { arch = "sm_90", sm_count = 132, clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 }
    local req, failed, job = ev:prepare(nil or ev.task.source, { name = "g.cu", defines = { kloop_block = "16x16", kloop_maxrreg = 32 } })
    assert.is_table(req, failed and failed.reason)
    -- 4096 / 32 = 128 blocks of 32x32 become 256 of 16x16: the same threads per dimension
    assert.are.same({ 256, 256, 1 }, req.plans.bench[1].grid)
    assert.are.same({ 16, 16, 1 }, req.plans.bench[1].block)
    assert.are.same({ 18, 24, 1 }, req.plans.check1[1].grid) -- 9 * 32 / 16, 12 * 32 / 16 (257 x 383)
    assert.is_nil(job.log:find("kloop_", 1, true))
    assert.is_true(job.resources.gemm.registers <= 32, "registers " .. tostring(job.resources.gemm.registers))
  end)
end)

describe("the cost model sees the candidate's parameters", function()
  it("computes the floor and the rates from a cost that uses a tunable", function()
    local task = gemm_task()
    task.params = { REPS = { 1, 4 } }
    -- a kernel that does the product REPS times: its cost says so
    task.cost = function(s) return { flops = 2 * s.M * s.N * s.K * s.REPS, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end
    local ev = eval.new(task)
    ev.gpu = { arch = "sm_90", sm_count = 132, clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 }
    local f1 = ev:floor_ms()             -- the default point: REPS = 1
    local f4 = ev:floor_ms({ REPS = 4 })
    assert.is_true(math.abs(f4 / f1 - 4) < 1e-9, string.format("%.4f vs %.4f", f1, f4))
    local r = ev:derive({ verdict = "ok", time_ms = 100 }, { REPS = 4 })
    assert.is_true(math.abs(r.tflops - 2 * 4096 ^ 3 * 4 / 0.1 / 1e12) < 1e-6)
  end)
end)
