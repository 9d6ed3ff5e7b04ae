-- tests/spec/profile_spec.lua: kloop.profile: metric lists, totals over kernels,
-- theoretical occupancy, the roofline summary and its hints (no GPU needed), and the
-- CUPTI Profiler Host API through the core (chip names, metric names, pass counts).
local prof = require("kloop.eval.profile")
local cjson = require("cjson")

local GEMM = { flops = 2 * 4096 ^ 3, bytes = 4 * 3 * 4096 ^ 2 }
local PEAKS = { flops = 52e12, bytes = 4.18e12 }

-- A profile input with the metrics given (everything else neutral).
local function input(metrics, extra)
  local p = { metrics = metrics, passes = 9, time_ms = 275.8, cost = GEMM, peaks = PEAKS, peaks_source = "measured",
    arch = "sm_90", launches = { { entry = "gemm", grid = { 128, 128 }, block = { 32, 32 }, smem = 0 } },
    resources = { gemm = { registers = 32, static_smem = 0, local_bytes = 0 } },
    activity = { plan_kernels = 1, reps = { { event_ms = 275.9, kernel_ms = 275.8, kernels = 1 } } } }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

local function kinds(s)
  local out = {}
  for _, h in ipairs(s.hints) do out[h.kind] = h.text end
  return out
end

describe("kloop.eval.profile", function()
  it("lists the default metrics, adds to them with +, or takes just the ones named", function()
    local all = prof.metric_list()
    assert.are.equal(#prof.DEFAULT + #prof.SUPPORT, #all)
    assert.is_true(#prof.DEFAULT >= 6 and #prof.DEFAULT <= 10)
    local plus = prof.metric_list("+smsp__inst_executed.sum, dram__bytes_read.sum")
    assert.are.equal(#all + 1, #plus) -- a default named again is not repeated
    assert.are.equal("smsp__inst_executed.sum", plus[#plus])
    assert.are.same({ "a__b.sum", "c__d.avg.pct_of_peak_sustained_elapsed" },
      prof.metric_list("a__b.sum,c__d.avg.pct_of_peak_sustained_elapsed"))
    assert.are.same({ "x__y.sum" }, prof.metric_list({ "x__y.sum" }))
  end)

  it("refuses what is not a metric name, naming it", function()
    local l, err = prof.metric_list("dram__bytes_read.sum,rm -rf")
    assert.is_nil(l)
    assert.matches("'rm %-rf' is not a metric name", err)
    assert.is_nil((prof.metric_list("nodoubleunderscore")))
    assert.is_nil((prof.metric_list(",")))
  end)

  it("adds counts over a plan's kernels and weights rates by kernel time", function()
    local names = { "gpu__time_duration.sum", "dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed" }
    local t = prof.aggregate(names, {
      { ["gpu__time_duration.sum"] = 3e6, ["dram__bytes_read.sum"] = 100, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 80 },
      { ["gpu__time_duration.sum"] = 1e6, ["dram__bytes_read.sum"] = 50, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 40 },
    })
    assert.are.equal(4e6, t["gpu__time_duration.sum"])
    assert.are.equal(150, t["dram__bytes_read.sum"])
    assert.are.near(70, t["sm__throughput.avg.pct_of_peak_sustained_elapsed"], 1e-9)
  end)

  it("takes the max of .max metrics, survives a NaN weight, and prints rates as rates", function()
    local names = { "gpu__time_duration.sum", "x__y.max", "sm__throughput.avg.pct_of_peak_sustained_elapsed" }
    local t = prof.aggregate(names, {
      { ["gpu__time_duration.sum"] = 0 / 0, ["x__y.max"] = 3, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 10 },
      { ["gpu__time_duration.sum"] = 1e6, ["x__y.max"] = 7, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 30 },
    })
    assert.are.equal(7, t["x__y.max"])
    local v = t["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert.is_true(v == v and v > 10 and v <= 30)
    assert.are.equal("3.3 GB/s", prof.fmt_metric("dram__bytes.sum.per_second", 3.3e9))
    assert.are.equal("1.50 GB", prof.fmt_metric("dram__bytes_read.sum", 1.5e9))
    assert.are.equal("nan", prof.fmt_bytes(0 / 0):lower():gsub("^%-", ""))
  end)

  it("warns when the profiler saw fewer kernels than the plan launched", function()
    local s = prof.summarize(input({}, { kernels = { {} }, launches = {
      { entry = "a", grid = { 1 }, block = { 32 }, smem = 0 }, { entry = "b", grid = { 1 }, block = { 32 }, smem = 0 } } }))
    assert.matches("1 ranges for a plan of 2 kernels", s.warning)
    s = prof.summarize(input({}, { dropped_ranges = 3 }))
    assert.matches("dropped 3 ranges", s.warning)
  end)

  it("computes theoretical occupancy and what limits it (sm_90)", function()
    local o = prof.occupancy("sm_90", { registers = 32 }, 1024)
    assert.are.equal(100, o.pct)
    o = prof.occupancy("sm_90", { registers = 64 }, 256)
    assert.are.equal(50, o.pct)
    assert.are.equal("registers", o.limiter)
    assert.are.equal(4, o.blocks_per_sm)
    o = prof.occupancy("sm_90", { registers = 16, static_smem = 100 * 1024 }, 256)
    assert.are.equal("shared memory", o.limiter)
    assert.are.equal(2, o.blocks_per_sm)
    o = prof.occupancy("sm_90", { registers = 16 }, 32)
    assert.are.equal("blocks per SM", o.limiter)
    assert.are.equal(50, o.pct)
    assert.is_nil(prof.occupancy("sm_99", { registers = 16 }, 32))
  end)

  it("places a naive gemm: compute-bound, 1% of the ceiling, uncoalesced, re-reading DRAM", function()
    local s = prof.summarize(input({
      ["dram__bytes_read.sum"] = 8.45e9, ["dram__bytes_write.sum"] = 0.1e9,
      ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 70866960384,
      ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 4294967296,
      ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 6, ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 0.6,
      ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = 98,
      ["sm__warps_active.avg.pct_of_peak_sustained_active"] = 98.7,
    }))
    assert.are.equal("compute", s.bound)
    assert.are.near(0.0096, s.frac, 0.0005)
    assert.are.near(683, s.intensity, 1)
    assert.are.near(12.44, s.ridge, 0.01)
    assert.are.near(42.5, s.dram_vs_model, 0.1)
    assert.are.near(16.5, s.sectors_per_request, 0.01)
    local k = kinds(s)
    assert.matches("16.5 sectors per request", k.coalescing)
    assert.matches("42.5x", k.reuse)
    assert.matches("98%% busy", k.memory_pipeline)
    assert.is_nil(k.occupancy)
    assert.matches("compute%-bound", prof.roofline_text(s))
  end)

  it("places a streaming kernel on the memory side, at the roofline", function()
    local N = 2 ^ 26
    local s = prof.summarize(input({ ["dram__bytes_read.sum"] = 8 * N, ["dram__bytes_write.sum"] = 4 * N,
      ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 90, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 40 },
      { cost = { flops = 2 * N, bytes = 12 * N }, time_ms = 0.2 }))
    assert.are.equal("memory", s.bound)
    assert.are.near(12 * N / 0.2e-3 / PEAKS.bytes, s.frac, 1e-9)
    assert.are.near(1, s.dram_vs_model, 1e-9)
    local k = kinds(s)
    assert.is_nil(k.reuse)
    assert.matches("90%% busy", k.memory_roofline)
  end)

  it("says why occupancy is low, and flags spills, bank conflicts and launch gaps", function()
    local s = prof.summarize(input({ ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] = 300,
      ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] = 1000 }, {
      resources = { k1 = { registers = 128, static_smem = 0, local_bytes = 64, spill_stores = 32 } },
      launches = { { entry = "k1", grid = { 64 }, block = { 256 }, smem = 0 }, { entry = "k1", grid = { 64 }, block = { 256 }, smem = 0 } },
      time_ms = 1.0,
      activity = { plan_kernels = 2, reps = { { event_ms = 1.2, kernel_ms = 0.5, kernels = 2 },
        { event_ms = 1.2, kernel_ms = 0.6, kernels = 2 }, { event_ms = 1.2, kernel_ms = 0.55, kernels = 2 } } } }))
    local k = kinds(s)
    assert.matches("theoretical occupancy 25%%.*128 registers", k.occupancy)
    assert.matches("64 B of local memory", k.spills)
    assert.matches("30%% of shared%-memory wavefronts", k.bank_conflicts)
    assert.matches("run 55%% of the timed interval", k.launch_gaps)
    assert.are.equal(0.55, s.activity.coverage)
    assert.are.equal("timed median", s.activity.basis)
  end)

  it("notices when CUPTI saw other kernels than the plan launched", function()
    local s = prof.summarize(input({}, { activity = { plan_kernels = 1, reps = { { event_ms = 1, kernel_ms = 1, kernels = 3 } } } }))
    assert.matches("saw 3 kernels for a launch plan of 1", kinds(s).activity)
  end)

  it("gives a clean kernel no hints, and keeps to what JSON can hold", function()
    local s = prof.summarize(input({ ["dram__bytes_read.sum"] = 1e8, ["dram__bytes_write.sum"] = 0.7e8,
      ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 70, ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 10,
      ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 30,
      ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 4e6, ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 1e6 },
      { time_ms = 4.0, activity = { plan_kernels = 1, reps = { { event_ms = 4.15, kernel_ms = 3.98, kernels = 1 } } } }))
    assert.are.same({}, s.hints)
    -- a kernel with no bytes in its cost model: compute-bound, and no infinity in the JSON
    local s2 = prof.summarize(input({}, { cost = { flops = 1e9, bytes = 0 } }))
    assert.are.equal("compute", s2.bound)
    local back = cjson.decode(cjson.encode(s2))
    assert.are.equal("compute", back.bound)
    assert.matches("inf FLOP/B", prof.roofline_text(back))
  end)

  it("takes the event timer's median when no evaluation time is given", function()
    local p = input({}, { activity = { plan_kernels = 1, reps = {
      { event_ms = 3, kernel_ms = 2.9, kernels = 1 }, { event_ms = 1, kernel_ms = 0.9, kernels = 1 },
      { event_ms = 2, kernel_ms = 1.9, kernels = 1 } } } })
    p.time_ms = nil
    local s = prof.summarize(p)
    assert.are.equal(2, s.time_ms)
    assert.are.equal("event timer", s.time_source)
    assert.are.equal("traced run", s.activity.basis)
    assert.are.near(0.95, s.activity.coverage, 1e-9)
    -- one kernel whose records disagree with the timer by more than 10%
    p.time_ms = 1.5
    assert.matches("differ by more than 10%%", kinds(prof.summarize(p)).timer_check)
  end)

  it("renders the report and a compact prompt text", function()
    local s = prof.summarize(input({ ["dram__bytes_read.sum"] = 8.45e9, ["dram__bytes_write.sum"] = 0.1e9,
      ["gpu__time_duration.sum"] = 275.8e6, ["sm__warps_active.avg.pct_of_peak_sustained_active"] = 98.7,
      ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 16.5e9, ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 1e9 }))
    local text = prof.text(s, prof.metric_list())
    assert.matches("gpu__time_duration.sum%s+275.8000 ms", text)
    assert.matches("dram__bytes_read.sum%s+8.45 GB", text)
    assert.matches("hints:", text)
    local pt = prof.prompt_text(s)
    assert.matches("^%- compute%-bound", pt)
    assert.matches("achieved occupancy 98.7%%", pt)
    assert.matches("sectors per request", pt)
    s.no_counters = "profiling not permitted"
    assert.matches("hardware counters unavailable: profiling not permitted", prof.prompt_text(s))
    assert.is_false(prof.prompt_text(nil))
  end)
end)

describe("CUPTI Profiler Host API (no GPU needed)", function()
  local core = require("kloop.core.ffi")
  local ffi, C = core.ffi, core.C
  local err = ffi.new("kl_err")
  local have = C.kl_cupti_load(err) == 0

  local function new(chip, names)
    local arr = ffi.new("const char*[?]", #names, names)
    local pp = ffi.new("kl_prof*[1]")
    local st = C.kl_prof_new(chip, arr, #names, pp, err)
    if st ~= 0 then return nil, st, ffi.string(err.msg) end
    local passes = C.kl_prof_passes(pp[0])
    C.kl_prof_free(pp[0])
    return passes
  end

  local function need_cupti()
    if not have then pending("libcupti not found here: " .. ffi.string(err.msg)) return false end
    return true
  end

  it("schedules the default metrics for an H100/H200 (GH100) in a handful of passes", function()
    if not need_cupti() then return end
    local passes, _, msg = new("GH100", prof.metric_list())
    assert.is_truthy(passes, msg)
    assert.is_true(passes >= 2 and passes <= 16, "passes " .. tostring(passes))
    assert.are.equal(1, (new("GH100", { "gpu__time_duration.sum" })))
  end)

  it("names an unknown metric and refuses an unknown chip", function()
    if not need_cupti() then return end
    local passes, st, msg = new("GH100", { "dram__bytes_read.sum", "dram__no_such_thing.sum" })
    assert.is_nil(passes)
    assert.are.equal(C.KL_EINVAL, st)
    assert.matches("unknown metric 'dram__no_such_thing.sum' for chip GH100", msg)
    local passes2, _, msg2 = new("NOTACHIP", { "dram__bytes_read.sum" })
    assert.is_nil(passes2)
    assert.matches("cuptiProfilerHostInitialize", msg2)
  end)

  it("refuses kernel activity that was never started", function()
    if not need_cupti() then return end
    local recs, n, dropped = ffi.new("kl_kernel_rec[1]"), ffi.new("int[1]"), ffi.new("int[1]")
    assert.are.equal(C.KL_EINVAL, C.kl_activity_stop(recs, 1, n, dropped, err))
  end)
end)
