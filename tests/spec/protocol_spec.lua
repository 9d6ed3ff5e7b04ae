-- tests/spec/protocol_spec.lua: the verification and timing protocol, on the sim backend.
package.path = "tests/spec/support/?.lua;" .. package.path
local protocol = require("kloop.worker.protocol")
local sim = require("backend_sim")

local header = 'local g = require("sim_gemm")\nlocal ffi = require("ffi")\nreturn {\n'
-- A sim "module": a Lua file returning kernels (header: the helpers the bodies use).
local function module(body, with_header)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(with_header or header, body, "\n}\n")
  f:close()
  return path
end

local REF = module([[gemm_ref = function(p) local M, N, K, A, B, C = g.args(p, "double*"); g.gemm(M, N, K, A, B, C) end]])

local function spec_for(sizes)
  local cases = {}
  for i, s in ipairs(sizes) do
    cases[i] = { label = s.label, bench = s.bench or false, size = s,
      args = { { value = s.M }, { value = s.N }, { value = s.K }, { count = s.M * s.K }, { count = s.K * s.N }, { count = s.M * s.N } },
      seeds = { { 1, 2, 3, 4 + i, 5 + i, 6 }, { 7, 8, 9, 10 + i, 11 + i, 12 } },
      ref_plan = { { entry = "gemm_ref", grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 } } }
  end
  return {
    args = {
      { name = "M", dtype = "i32" }, { name = "N", dtype = "i32" }, { name = "K", dtype = "i32" },
      { name = "A", dtype = "f32", pointer = true, role = "input",
        dists = { { kind = "uniform", a = -1, b = 1 }, { kind = "normal", a = 0, b = 0.5 } } },
      { name = "B", dtype = "f32", pointer = true, role = "input",
        dists = { { kind = "normal", a = 0, b = 1 }, { kind = "uniform", a = -2, b = 2 } } },
      { name = "C", dtype = "f32", pointer = true, role = "output" },
    },
    cases = cases, nsets = 2, tolerance = { rel = 1e-5, deterministic = "exact" },
    reference = { entry = "gemm_ref", precision = "f64" },
  }
end

local SPEC = spec_for({ { label = "check1", M = 5, N = 7, K = 3 }, { label = "check2", M = 1, N = 3, K = 9 },
  { label = "bench", M = 16, N = 16, K = 16, bench = true } })

local function plans()
  local p = {}
  for _, c in ipairs(SPEC.cases) do p[c.label] = { { entry = "gemm", grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 } } end
  return p
end

local function evaluate(body, extra)
  local req = { cubin = module(body), plans = plans(), timing = { budget = 0.05, min_reps = 3, max_reps = 20 } }
  for k, v in pairs(extra or {}) do req[k] = v end
  return protocol.evaluate(sim, req)
end

-- The sim's load and unload counting the live module instances (counts.live), each
-- load noted by note() where given; refuse(live) true makes a load fail as the device
-- out of memory. Returns what puts them back.
local function count_modules(counts, note, refuse)
  local load, unload = sim.load, sim.unload
  sim.load = function(...)
    if refuse and refuse(counts.live) then return nil, "out of memory (simulated: one instance fits)" end
    local m, e = load(...)
    if m then
      counts.live = counts.live + 1
      if note then note() end
    end
    return m, e
  end
  sim.unload = function(m)
    if m and m.ptr then counts.live = counts.live - 1 end
    return unload(m)
  end
  return function() sim.load, sim.unload = load, unload end
end

-- The sim's check_regions running `beside` as CUDA's does: after the check is queued,
-- before its wait (set_phase, where given, is told "check" then "idle"). Returns what
-- puts it back.
local function check_calling_beside(set_phase)
  local check = sim.check_regions
  sim.check_regions = function(arr, n, out, beside)
    local ok, m = check(arr, n, out)
    if set_phase then set_phase("check") end
    if ok and beside then beside() end
    if set_phase then set_phase("idle") end
    return ok, m
  end
  return function() sim.check_regions = check end
end

describe("kloop.protocol on the sim backend", function()
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)

  it("passes a correct kernel, with timing samples and a CI", function()
    local r = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("ok", r.verdict, r.reason)
    assert.is_true(r.reps >= 3 and #r.samples == r.reps)
    assert.is_true(r.ci_ms[1] <= r.time_ms and r.time_ms <= r.ci_ms[2])
  end)

  -- the clocks are read while the first and the last timed repetition run (after the stop
  -- event is queued, before it is read): never between launches, where the GPU would idle
  -- through a read that stalls (an idle GPU's NVML reads take 0.5-3 ms now and then)
  it("reads the clocks twice, each while a timed repetition runs", function()
    local phases, n = {}, 0
    local stop, read = sim.timer_stop, sim.timer_read
    local in_flight = false
    sim.timer_stop = function() local ok = stop() in_flight = true return ok end
    sim.timer_read = function() in_flight = false return read() end
    sim.sample = function()
      n = n + 1
      phases[#phases + 1] = in_flight and "in flight" or "idle"
      return { sm_mhz = 1000 + n }
    end
    local ok, r = pcall(evaluate, [[gemm = function(p) g.gemm(g.args(p)) end]],
      { timing = { budget = 0.05, min_reps = 4, max_reps = 4 } })
    -- (one repetition: one read, kept once, as the one after)
    local ok1, r1 = pcall(evaluate, [[gemm = function(p) g.gemm(g.args(p)) end]],
      { timing = { budget = 0.05, min_reps = 1, max_reps = 1 } })
    sim.timer_stop, sim.timer_read, sim.sample = stop, read, nil
    assert.is_true(ok, tostring(r))
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(4, r.reps)
    assert.are.same({ "in flight", "in flight", "in flight" }, phases)
    assert.are.equal(1001, r.clocks.before.sm_mhz)
    assert.are.equal(1002, r.clocks.after.sm_mhz)
    assert.is_true(ok1, tostring(r1))
    assert.are.equal(1, r1.reps)
    assert.is_nil(r1.clocks.before)
    assert.are.equal(1003, r1.clocks.after.sm_mhz)
  end)

  -- each timed repetition launches a fresh instance of the module; the next one is loaded
  -- while the last repetition's state check runs (the GPU busy with it), never while a
  -- timed repetition is in flight, and none is left loaded when a check fails
  it("loads the next repetition's fresh module during the state check, never during the timing", function()
    local stop, read, start = sim.timer_stop, sim.timer_read, sim.timer_start
    local phase, loads, counts, seen = "idle", {}, { live = 0 }, {}
    local put_modules = count_modules(counts, function() loads[#loads + 1] = phase end)
    local put_check = check_calling_beside(function(p) phase = p end)
    sim.timer_start = function() _G.TIMED = true return start() end
    sim.timer_stop = function() local ok = stop() phase = "timing" _G.TIMED = nil return ok end
    sim.timer_read = function() phase = "idle" return read() end
    -- a timed launch notes its module's globals table (kept: no address reused): a fresh
    -- instance has a fresh one
    local body = [[globals = { hits = 4 },
      gemm = function(p, grid, block, globals) g.gemm(g.args(p)); if _G.TIMED then _G.SEEN[#_G.SEEN + 1] = globals end end]]
    _G.SEEN = seen
    local ok, r = pcall(evaluate, body, { timing = { budget = 1, min_reps = 4, max_reps = 4 } })
    local timed_loads = #loads
    -- a kernel that changes its input in its third timed repetition: the check fails
    -- after the next repetition's module was loaded beside it
    local live_before = counts.live
    local ok2, r2 = pcall(evaluate, [[globals = { n = 4 },
      gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
        if _G.TIMED then _G.RUNS = (_G.RUNS or 0) + 1; if _G.RUNS == 3 then A[0] = A[0] + 1 end end end]],
      { timing = { budget = 1, min_reps = 6, max_reps = 6 } })
    local runs = _G.RUNS
    put_modules()
    put_check()
    sim.timer_stop, sim.timer_read, sim.timer_start = stop, read, start
    _G.SEEN, _G.RUNS, _G.TIMED = nil, nil, nil
    assert.is_true(ok, tostring(r))
    assert.are.equal("ok", r.verdict, r.reason)
    -- the candidate's load, the first repetition's reload (after verification, idle), and
    -- one load beside each of the first three repetitions' checks
    assert.are.same({ "idle", "idle", "check", "check", "check" }, { unpack(loads, 1, timed_loads) })
    assert.are.equal(4, #seen)
    local distinct = {}
    for _, gtab in ipairs(seen) do distinct[gtab] = true end
    local nd = 0
    for _ in pairs(distinct) do nd = nd + 1 end
    assert.are.equal(4, nd, "every timed repetition had a module of its own")
    assert.is_true(ok2, tostring(r2))
    assert.are.equal("inputs_modified", r2.verdict, r2.reason)
    assert.are.equal("bench", r2.evidence.case)
    assert.are.equal(3, runs, "the check after the third timed launch gives the verdict")
    assert.are.equal(live_before, counts.live, "a module left loaded after the failing check")
  end)

  -- a module that fits on the device once but not twice: the preload finds no room, and
  -- the reload unloads the old instance first (the preload's two instances must not make
  -- such a candidate untimable)
  it("times a module that fits only once: the reload makes room where the preload found none", function()
    local counts = { live = 0 }
    local put_modules = count_modules(counts, nil, function(live) return live >= 1 end)
    local put_check = check_calling_beside()
    local ok, r = pcall(evaluate, [[globals = { big = 64 }, gemm = function(p) g.gemm(g.args(p)) end]],
      { timing = { budget = 1, min_reps = 4, max_reps = 4 } })
    put_modules()
    put_check()
    assert.is_true(ok, tostring(r))
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(4, r.reps)
    assert.are.equal(0, counts.live)
  end)

  it("finds unwritten outputs (poison left in place)", function()
    local r = evaluate([[gemm = function(p) end]])
    assert.are.equal("unwritten", r.verdict)
    assert.are.equal("check1", r.evidence.case)
    assert.are.equal(0, r.evidence.index)
  end)

  it("finds a partial write on the ragged size", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p)
      if M % 4 == 0 then g.gemm(M, N, K, A, B, C) else g.gemm(M - 1, N, K, A, B, C) end end]])
    assert.are.equal("unwritten", r.verdict)
    assert.are.equal(4 * 7, r.evidence.index)
  end)

  it("finds wrong results, with the worst element as evidence", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); C[3] = C[3] + 0.5 end]])
    assert.are.equal("wrong", r.verdict)
    assert.are.equal(3, r.evidence.index)
  end)

  it("passes rounding noise far inside the tolerance", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      for i = 0, M * N - 1 do C[i] = C[i] * (1 + 1e-7) end end]])
    assert.are.equal("ok", r.verdict, r.reason)
  end)

  it("flags NaN where the reference is finite", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); C[1] = 0/0 end]])
    assert.are.equal("nan", r.verdict)
    assert.are.equal(1, r.evidence.index)
  end)

  it("flags inputs modified by the kernel", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); B[2] = 7 end]])
    assert.are.equal("inputs_modified", r.verdict)
    assert.are.equal("B", r.evidence.arg)
    assert.are.equal(2, r.evidence.index)
  end)

  it("flags a kernel whose repeated run differs", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      _G.flip = not _G.flip; if _G.flip then C[0] = C[0] * (1 + 1e-7) end end]])
    assert.are.equal("nondeterministic", r.verdict)
  end)

  it("catches results cached by input pointer (inputs rotate at the same address)", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p)
      _G.cache = _G.cache or {}
      local key = tostring(ffi.cast("uintptr_t", A)) .. M
      local c = _G.cache[key]
      if c then for i = 0, M * N - 1 do C[i] = c[i] end return end
      g.gemm(M, N, K, A, B, C)
      c = {}; for i = 0, M * N - 1 do c[i] = C[i] end; _G.cache[key] = c end]])
    assert.are.equal("wrong", r.verdict)
  end)

  it("catches a kernel that only works at the bench size", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, 16, A, B, C) end]])
    -- garbage reads past the inputs; NaN payloads may even copy the poison pattern
    assert.are_not.equal("ok", r.verdict)
  end)

  it("turns launch failures into verdicts, fatal ones into crashed", function()
    sim.fail_next = { msg = "invalid argument" }
    local r = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("launch_error", r.verdict)
    assert.is_nil(r.fatal)
    sim.fail_next = { msg = "illegal address", fatal = true }
    r = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("crashed", r.verdict)
    assert.is_true(r.fatal)
  end)

  it("reports too_fast below the physical floor", function()
    local r = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]], { floor_ms = 1e6 })
    assert.are.equal("too_fast", r.verdict)
  end)

  it("refuses a plan with too much shared memory", function()
    local req_plans = plans()
    req_plans.check1[1].smem = 300 * 1024
    local r = protocol.evaluate(sim, { cubin = module([[gemm = function(p) end]]), plans = req_plans })
    assert.are.equal("launch_error", r.verdict)
  end)

  it("compares two candidates interleaved, with a ratio and its CI", function()
    local fast = { cubin = module([[gemm = function(p) g.gemm(g.args(p)) end]]), plans = plans() }
    local slow = { cubin = module([[gemm = function(p) for r = 1, 20 do g.gemm(g.args(p)) end end]]), plans = plans() }
    local r = protocol.compare(sim, { a = slow, b = fast, timing = { budget = 0.2, min_reps = 5, max_reps = 30 } })
    assert.are.equal("ok", r.a.verdict, r.a.reason)
    assert.are.equal("ok", r.b.verdict, r.b.reason)
    assert.are.equal(r.a.reps, r.b.reps)
    assert.is_true(r.ratio > 1.5, "slow/fast ratio " .. tostring(r.ratio))
    assert.is_true(r.ratio_ci[1] <= r.ratio_ci[2])
  end)

  it("reports the failing side of a comparison", function()
    local good = { cubin = module([[gemm = function(p) g.gemm(g.args(p)) end]]), plans = plans() }
    local bad = { cubin = module([[gemm = function(p) end]]), plans = plans() }
    local r = protocol.compare(sim, { a = good, b = bad })
    assert.are.equal("unwritten", r.b.verdict)
    assert.is_nil(r.ratio)
  end)

  it("names a missing kernel", function()
    local r = evaluate([[other = function(p) end]])
    assert.are.equal("launch_error", r.verdict)
    assert.matches("gemm", r.reason)
  end)

  -- profiling: kernel activity around event-timed runs, metrics per kernel, then the
  -- outputs checked again (kernel replay must leave them right)
  local function profile(body, extra, nkernels)
    local p = {}
    for _, c in ipairs(SPEC.cases) do
      p[c.label] = {}
      for k = 1, nkernels or 1 do
        p[c.label][k] = { entry = "gemm" .. (k > 1 and k or ""), grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 }
      end
    end
    local req = { cubin = module(body), plans = p, metrics = { "gpu__time_duration.sum", "sim__count.sum" }, reps = 3 }
    for k, v in pairs(extra or {}) do req[k] = v end
    return protocol.profile(sim, req)
  end

  it("profiles a two-kernel plan: activity per timed run, metrics per kernel", function()
    local r = profile([[gemm = function(p) g.gemm(g.args(p)) end, gemm2 = function(p) end]], nil, 2)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(3, #r.activity.reps)  -- the warm-up run is not counted
    assert.are.equal(2, r.activity.plan_kernels)
    for _, rep in ipairs(r.activity.reps) do
      assert.are.equal(2, rep.kernels)
      assert.is_true(rep.kernel_ms > 0 and rep.event_ms > 0)
    end
    assert.are.equal(2, #r.per_kernel)
    assert.are.equal(2, r.per_kernel[2]["sim__count.sum"])
    assert.are.equal(2, r.passes)
    assert.are.equal(2, sim.prepared) -- inputs, poison and flush before every pass
    assert.are.same({ "gemm", "gemm2" }, { r.launches[1].entry, r.launches[2].entry })
    assert.is_nil(r.profile_warning)
  end)

  it("does not profile a kernel that fails verification", function()
    local r = profile([[gemm = function(p) end]])
    assert.are.equal("unwritten", r.verdict)
    assert.is_nil(r.per_kernel)
  end)

  it("skips verification only when told the binary was just verified", function()
    local r = profile([[gemm = function(p) end]], { verified = true })
    assert.are.equal("ok", r.verdict)
    -- ... and still notices outputs that are wrong after the profiled launch
    assert.matches("never written", r.profile_warning)
  end)

  it("carries on without counters where profiling is not permitted", function()
    sim.no_counters = true
    local r = profile([[gemm = function(p) g.gemm(g.args(p)) end]])
    sim.no_counters = nil
    assert.are.equal("ok", r.verdict)
    assert.is_true(r.no_counters)
    assert.matches("not permitted", r.metrics_error)
    assert.are.equal(3, #r.activity.reps)
  end)
end)

-- Isolation between candidates (issue 12): guard zones around every buffer, the worker's
-- state checked against host truth after every candidate and restored, and no state
-- carried into a timed launch. Each hostile kernel is followed by a correct one.
describe("kloop.protocol: guard zones and the worker's state", function()
  local ffi = require("ffi")
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)

  local GOOD = [[gemm = function(p) g.gemm(g.args(p)) end]]
  local function next_ok()
    local r = evaluate(GOOD)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.is_nil(r.restart)
  end

  it("catches a write one element past the output (the off-by-one row)", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); C[M * N] = 1 end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.are.equal("after", r.evidence.side)
    assert.are.equal(1, r.evidence.count)
    assert.matches("^C %(check1%)", r.evidence.buffer)
    assert.are.equal(5 * 7 * 4, r.evidence.offset) -- right at the end of the 5x7 output
    assert.matches("0 bytes past the end", r.reason)
    next_ok()
  end)

  it("catches a write just before an input", function()
    local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); A[-3] = 7 end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.are.equal("before", r.evidence.side)
    assert.are.equal(-12, r.evidence.offset)
    next_ok()
  end)

  it("catches a ragged tile written past the end on a check size only", function()
    -- rows rounded up to a tile of 4: lands in the guard zone, never in a neighbour
    local r = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      for r = M, math.ceil(M / 4) * 4 - 1 do for c = 0, N - 1 do C[r * N + c] = 0 end end end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.are.equal(3 * 7, r.evidence.count)
    next_ok()
  end)

  it("catches a far write into kloop's copy of another size's inputs, restores it, and the next verdicts stand", function()
    local r = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local st = require("kloop.worker.protocol").debug_state()
      local orig = ffi.cast("float*", st.cases[3].sets[2].dev_inputs[4])
      orig[17] = 0 end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.matches("kloop's copy of input A %(bench, set 2%)", r.reason)
    assert.matches("kloop's copy of input A", r.evidence.buffer)
    -- without the restore, every later candidate would be judged on a changed input
    next_ok()
    next_ok()
  end)

  it("catches a write into the guard zone of an input original (checked after the candidate)", function()
    local r = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local st = require("kloop.worker.protocol").debug_state()
      ffi.cast("uint32_t*", st.cases[3].sets[1].bufs[4].guards[1].ptr)[100] = 0 end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.are.equal("state check after the candidate", r.evidence.phase)
    assert.are.equal("ok", r.evidence.prior_verdict)
    next_ok()
  end)

  it("catches an overrun that happens only in timed launches", function()
    local r = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if require("backend_sim").timing then C[M * N + 2] = 1 end end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.matches("timed launch 1", r.evidence.phase)
    next_ok()
  end)

  it("reloads the module before every timed launch, so a cache in its globals never serves one", function()
    local body = [[
      gemm = (function() local cache = {} return function(p)
        local M, N, K, A, B, C = g.args(p)
        local key = M .. ":" .. A[0] .. ":" .. B[1]
        local hit = cache[key]
        if hit then
          if require("backend_sim").timing then _G.sim_cache_hits = (_G.sim_cache_hits or 0) + 1 end
          for i = 0, M * N - 1 do C[i] = hit[i] end
          return
        end
        g.gemm(M, N, K, A, B, C)
        local copy = {}
        for i = 0, M * N - 1 do copy[i] = C[i] end
        cache[key] = copy
      end end)()]]
    _G.sim_cache_hits = 0
    local r = evaluate(body)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(0, _G.sim_cache_hits)
    -- the same kernel without the reload is served from its cache (the test can fail)
    r = evaluate(body, { timing = { budget = 0.05, min_reps = 3, max_reps = 20, reload = false } })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.is_true(_G.sim_cache_hits > 0)
    _G.sim_cache_hits = nil
  end)

  it("catches a changed flush buffer or other backend state through the backend's regions", function()
    local saved = sim.state_regions
    local scratch = ffi.new("uint32_t[64]")
    -- a backend buffer of zeros, as the CUDA backend's L2 flush scratch is
    local regions = { { ptr = tonumber(ffi.cast("uintptr_t", scratch)), nwords = 64, mode = ffi.C.KL_REGION_CONST,
      word = 0, what = "the sim's scratch" } }
    sim.state_regions = function() return regions end
    assert(protocol.setup(sim, SPEC, REF))
    scratch[5] = 9
    local r = evaluate(GOOD)
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.matches("the sim's scratch", r.reason)
    -- the backend cannot restore it: the worker must restart
    assert.is_true(r.restart)
    sim.state_regions = saved
    assert(protocol.setup(sim, SPEC, REF))
    next_ok()
  end)

  it("verifies without timing on request (the sentinel's check)", function()
    local r = evaluate(GOOD, { verify_only = true })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.is_true(r.verified_only)
    assert.is_nil(r.time_ms)
  end)
end)

-- (the screening and cascade specs) every launch of the candidate is logged (M of its
-- size), across module reloads; launches(fn) runs fn and counts them per size
local LOGGED = [[gemm = function(p) local M, N, K, A, B, C = g.args(p)
  _G.kloop_launches = _G.kloop_launches or {}
  table.insert(_G.kloop_launches, M)
  g.gemm(M, N, K, A, B, C) end]]
local function launches(fn)
  _G.kloop_launches = {}
  local r = fn()
  local by = {}
  for _, m in ipairs(_G.kloop_launches) do by[m] = (by[m] or 0) + 1 end
  _G.kloop_launches = nil
  return r, by
end

describe("kloop.protocol: the screening stage (docs/TASKS.md, Stages)", function()
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)
  local SCREEN_TIMING = { min_reps = 3, max_reps = 3, budget = 0 }

  it("verifies one size with one input set, then times a few bench repetitions", function()
    local r, by = launches(function()
      return evaluate(LOGGED, { stage = "screen", screen_case = "check2", timing = SCREEN_TIMING })
    end)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal("screened", r.stage)
    assert.are.equal("check2", r.screen_case)
    assert.are.equal(3, r.reps)
    -- check2 (M = 1) once: one set, no repeat; check1 (M = 5) never; bench (M = 16) only timed
    assert.are.same({ [1] = 1, [16] = 3 }, by)
    assert.matches("screened: verified on check2 x 1 input set; timed 3 repetitions", r.reason, 1, true)
    -- the full protocol for comparison: every size x 2 sets + a repeat, then the timing
    local f, fby = launches(function() return evaluate(LOGGED) end)
    assert.are.equal("ok", f.verdict, f.reason)
    assert.is_nil(f.stage)
    assert.are.equal(3, fby[1])
    assert.are.equal(3, fby[5])
    -- (the bench size verified on its timed launches, and two more on the last one's load)
    assert.are.equal(f.reps + 2, fby[16])
  end)

  it("picks the check case with the fewest bytes when the parent names none (the screen op)", function()
    local req = { cubin = module(LOGGED), plans = plans(), timing = SCREEN_TIMING }
    local r = protocol.screen(sim, req)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal("check2", r.screen_case) -- 1x3x9: 39 floats against check1's 71
  end)

  it("passes a kernel wrong only on another check size, which the full protocol fails", function()
    local WRONG_ON_CHECK1 = [[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if M == 5 then C[2] = C[2] + 1 end end]]
    local r = evaluate(WRONG_ON_CHECK1, { stage = "screen", screen_case = "check2", timing = SCREEN_TIMING })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal("screened", r.stage)
    local f = evaluate(WRONG_ON_CHECK1)
    assert.are.equal("wrong", f.verdict)
    assert.are.equal("check1", f.evidence.case)
  end)

  it("still verifies the timed outputs at the bench size, and checks the state after the candidate", function()
    local WRONG_ON_BENCH = [[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if M == 16 then C[0] = C[0] + 1 end end]]
    local r = evaluate(WRONG_ON_BENCH, { stage = "screen", screen_case = "check2", timing = SCREEN_TIMING })
    assert.are.equal("wrong", r.verdict)
    assert.are.equal("screened", r.stage)
    assert.matches("timed launch 1", r.reason, 1, true)
    -- a far write into kloop's copy of another size's input is caught after a screen too
    local o = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local st = require("kloop.worker.protocol").debug_state()
      ffi.cast("float*", st.cases[3].sets[2].dev_inputs[4])[17] = 0 end]],
      { stage = "screen", screen_case = "check2", timing = SCREEN_TIMING })
    assert.are.equal("out_of_bounds", o.verdict, o.reason)
    assert.are.equal("screened", o.stage)
    assert.matches("kloop's copy of input A %(bench, set 2%)", o.reason)
    local again = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("ok", again.verdict, again.reason)
  end)
end)

describe("kloop.protocol: both stages in one request (the cascade op)", function()
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)
  local function cascade(body, extra)
    local req = { cubin = module(body), plans = plans(), screen_case = "check2",
      screen_timing = { min_reps = 3, max_reps = 3, budget = 0 }, timing = { budget = 0.05, min_reps = 5, max_reps = 8 } }
    for k, v in pairs(extra or {}) do req[k] = v end
    return protocol.cascade(sim, req)
  end

  it("promotes within the bound and runs the full protocol without the screen's size and set again", function()
    local r, by = launches(function() return cascade(LOGGED) end)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal("full", r.stage)
    assert.are.equal("ok", r.screen.verdict)
    assert.are.equal(3, r.screen.reps)
    assert.are.equal("check2", r.screen.screen_case)
    assert.are.equal(3, r.screen_reps_reused)
    assert.is_true(r.reps >= 5 and r.reps <= 8 and #r.samples == r.reps)
    assert.matches("verified on 3 sizes x 2 input sets; timed %d+ repetitions %(the first 3 the screen's%)", r.reason)
    -- check2 (M = 1): the screen's set 1, then set 2 and the repeat (3, as a full
    -- evaluation alone runs it); check1 (M = 5) 2 sets + a repeat; bench (M = 16): the
    -- timed repetitions (the screen's among them), verified as they run, and two more
    -- on the last one's load
    assert.are.equal(3, by[1])
    assert.are.equal(3, by[5])
    assert.are.equal(r.reps + 2, by[16])
    assert.matches("(the bench size verified on its timed launches)", r.reason, 1, true)
  end)

  it("stops at the screen when its median is above the bound", function()
    local r, by = launches(function() return cascade(LOGGED, { promote_below = 1e-12 }) end)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal("screened", r.stage)
    assert.are.equal(3, r.reps)
    assert.is_nil(r.screen)
    assert.are.same({ [1] = 1, [16] = 3 }, by)
  end)

  it("fails at the screen for a kernel wrong on the screen's size, and in the full stage for one wrong elsewhere", function()
    local s = cascade([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if M == 1 then C[0] = C[0] + 1 end end]])
    assert.are.equal("wrong", s.verdict)
    assert.are.equal("screened", s.stage)
    assert.are.equal("check2", s.evidence.case)
    local f = cascade([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if M == 5 then C[2] = C[2] + 1 end end]])
    assert.are.equal("wrong", f.verdict)
    assert.are.equal("full", f.stage)
    assert.are.equal("check1", f.evidence.case)
    assert.are.equal("ok", f.screen.verdict)
    -- wrong only on the screen's size with the second input set: the full stage runs that set
    local s2 = cascade([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      if M == 1 and A[0] < 0 then C[0] = C[0] + 1 end end]])
    assert.are.equal("full", s2.stage)
    assert.are.equal("wrong", s2.verdict, s2.reason)
    assert.are.equal("check2", s2.evidence.case)
    assert.are.equal(2, s2.evidence.set)
  end)

  it("runs the screen's size's repeat in the full stage (a kernel that differs on its second launch)", function()
    local r = cascade([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      _G.kloop_n1 = (_G.kloop_n1 or 0) + (M == 1 and 1 or 0)
      if M == 1 and _G.kloop_n1 == 3 then C[0] = C[0] * (1 + 1e-6) + 1e-6 end end]])
    _G.kloop_n1 = nil
    assert.are.equal("full", r.stage)
    assert.are.equal("nondeterministic", r.verdict, r.reason)
    assert.are.equal("check2", r.evidence.case)
  end)

  it("keeps the stage reached when the state check after the candidate changes the verdict", function()
    local o = cascade([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local st = require("kloop.worker.protocol").debug_state()
      -- (check1's copy, written in the full stage's bench launches, after check1 was
      -- verified: found by the check after the candidate alone)
      _G.kloop_n16 = (_G.kloop_n16 or 0) + (M == 16 and 1 or 0)
      if M == 16 and _G.kloop_n16 > 3 then ffi.cast("float*", st.cases[1].sets[2].dev_inputs[4])[1] = 7 end end]])
    _G.kloop_n16 = nil
    assert.are.equal("out_of_bounds", o.verdict, o.reason)
    assert.matches("state check after the candidate", o.evidence.phase, 1, true)
    assert.are.equal("ok", o.evidence.prior_verdict)
    assert.are.equal("full", o.stage)
    assert.are.equal("ok", o.screen.verdict)
    local again = cascade([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("ok", again.verdict, again.reason)
  end)
end)

-- Inputs drawn on the device (issue 15): no host fill and no copy at setup; the same
-- bits, digests and verdicts as the host path; the host copy drawn only when something
-- needs it; an input a kernel damaged drawn again where it is.
describe("kloop.protocol: inputs drawn on the device", function()
  local ffi = require("ffi")
  after_each(function() sim.inputs_on_device = true end)

  -- every input copy's bytes and digest, by case/set/arg
  local function inputs_of()
    local out, st = {}, protocol.debug_state()
    for ci, case in ipairs(st.cases) do
      for s, set in ipairs(case.sets) do
        for i, b in pairs(set.bufs) do
          out[ci .. "/" .. s .. "/" .. i] = { bytes = ffi.string(ffi.cast("void*", b.ptr), b.used), digest = set.digests[i],
            host = set.host_inputs[i] ~= nil }
        end
      end
    end
    return out
  end

  it("draws the host's bits there, with the host's digests, and draws nothing on the host", function()
    sim.inputs_on_device = false
    assert(protocol.setup(sim, SPEC, REF))
    local host = inputs_of()
    sim.inputs_on_device = true
    local n0 = sim.inputs_drawn
    assert(protocol.setup(sim, SPEC, REF))
    local dev = inputs_of()
    assert.are.equal(3 * 2 * 2, sim.inputs_drawn - n0)
    local n = 0
    for k, h in pairs(host) do
      n = n + 1
      assert.is_true(h.host, k .. ": the host path keeps a host copy")
      assert.is_false(dev[k].host, k .. ": drawn on the host too")
      assert.are.equal(h.bytes, dev[k].bytes, k)
      assert.are.equal(tostring(h.digest), tostring(dev[k].digest), k)
    end
    assert.are.equal(12, n)
  end)

  it("names the first changed element of a modified input on either path", function()
    local got = {}
    for _, on in ipairs({ false, true }) do
      sim.inputs_on_device = on
      assert(protocol.setup(sim, SPEC, REF))
      got[on] = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); B[5] = 7 end]])
      assert.are.equal("inputs_modified", got[on].verdict, got[on].reason)
    end
    assert.are.equal(got[false].reason, got[true].reason)
    assert.are.equal(5, got[true].evidence.index)
  end)

  -- a host copy drawn later must be the device's bits (checked against the device digest)
  it("refuses a host draw that differs from what the device drew", function()
    local real = sim.fill_input
    sim.fill_input = function(ptr, dtype, n, used, dist, seed, round) return real(ptr, dtype, n, used, dist, seed + 1, round) end
    local ok, err = pcall(function()
      assert(protocol.setup(sim, SPEC, REF))
      local r = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); B[5] = 7 end]])
      assert.are.equal("launch_error", r.verdict, r.reason)
      assert.matches("differs from the device's", r.reason)
    end)
    sim.fill_input = real
    assert(ok, err)
  end)

  it("draws a damaged input original again where it is, and the next verdicts stand", function()
    sim.inputs_on_device = true
    assert(protocol.setup(sim, SPEC, REF))
    local n0 = sim.inputs_drawn
    local r = evaluate([[gemm = function(p)
      local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local st = require("kloop.worker.protocol").debug_state()
      ffi.cast("float*", st.cases[2].sets[1].dev_inputs[5])[1] = 0 end]])
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    assert.matches("kloop's copy of input B %(check2, set 1%)", r.reason)
    assert.is_true(sim.inputs_drawn > n0, "the original was not drawn again")
    local st = protocol.debug_state()
    assert.is_nil(st.cases[2].sets[1].host_inputs[5], "restored from a host copy")
    local ok = evaluate([[gemm = function(p) g.gemm(g.args(p)) end]])
    assert.are.equal("ok", ok.verdict, ok.reason)
  end)
end)

-- Inout buffers (issue 16): a stencil writes only the interior of Y; the halo keeps its
-- initial value, which the reference (in f64, a separate kernel) starts from too.
describe("kloop.protocol: inout buffers with a separate reference", function()
  local function stencil_spec()
    local cases = {}
    for i, n in ipairs({ 5, 64 }) do
      cases[i] = { label = i == 1 and "check1" or "bench", bench = i == 2, size = { N = n },
        args = { { value = n }, { count = n }, { count = n } },
        seeds = { { 1, 20 + i, 30 + i }, { 2, 40 + i, 50 + i } },
        ref_plan = { { entry = "ref", grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 } } }
    end
    return {
      args = {
        { name = "N", dtype = "i32" },
        { name = "X", dtype = "f32", pointer = true, role = "input", dists = { { kind = "uniform", a = -1, b = 1 } } },
        { name = "Y", dtype = "f32", pointer = true, role = "inout", dists = { { kind = "uniform", a = 5, b = 6 } } },
      },
      cases = cases, nsets = 2, tolerance = { rel = 1e-5, deterministic = "exact" },
      reference = { entry = "ref", precision = "f64" },
    }
  end
  local sheader = 'local ffi = require("ffi")\n'
    .. 'local function a(p, t) return ffi.cast("int32_t*", p[0])[0], ffi.cast("float*", ffi.cast("uint64_t*", p[1])[0]),'
    .. ' ffi.cast(t or "float*", ffi.cast("uint64_t*", p[2])[0]) end\nreturn {\n'
  local function smodule(body) return module(body, sheader) end
  local INTERIOR = "for i = 1, N - 2 do Y[i] = (X[i - 1] + X[i] + X[i + 1]) / 3 end"
  local SREF = smodule("ref = function(p) local N, X, Y = a(p, 'double*') " .. INTERIOR .. " end")
  local function run(body)
    local p = {}
    for _, c in ipairs({ "check1", "bench" }) do p[c] = { { entry = "k", grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 } } end
    return protocol.evaluate(sim, { cubin = smodule(body), plans = p, timing = { budget = 0.02, min_reps = 3, max_reps = 5 } })
  end

  setup(function() assert(protocol.setup(sim, stencil_spec(), SREF)) end)

  it("passes a stencil that leaves the halo as it found it", function()
    local r = run("k = function(p) local N, X, Y = a(p) " .. INTERIOR .. " end")
    assert.are.equal("ok", r.verdict, r.reason)
  end)

  it("catches a stencil that clears the halo (every element is compared)", function()
    local r = run("k = function(p) local N, X, Y = a(p) " .. INTERIOR .. " Y[0] = 0 Y[N - 1] = 0 end")
    assert.are.equal("wrong", r.verdict, r.reason)
    assert.is_true(r.evidence.index == 0 or r.evidence.index == 4, "worst at " .. tostring(r.evidence.index))
  end)

  it("catches a stencil that reads its own output instead of the input", function()
    local r = run("k = function(p) local N, X, Y = a(p) for i = 1, N - 2 do Y[i] = (Y[i - 1] + X[i] + X[i + 1]) / 3 end end")
    assert.are.equal("wrong", r.verdict, r.reason)
  end)

  -- the reference's f64 copy of Y's initial values, drawn on the device through f32, is
  -- the host's conversion: the reference keeps the halo the candidate keeps
  it("starts the reference from the same halo whether drawn on the device or the host", function()
    local refs = {}
    for _, on in ipairs({ false, true }) do
      sim.inputs_on_device = on
      assert(protocol.setup(sim, stencil_spec(), SREF))
      local r = run("k = function(p) local N, X, Y = a(p) " .. INTERIOR .. " end")
      assert.are.equal("ok", r.verdict, r.reason)
      local st = protocol.debug_state()
      local set = st.cases[1].sets[2]
      assert.are.equal(on, set.on_device[3] == true)
      refs[on] = set.ref_rms[3]
    end
    sim.inputs_on_device = true
    assert.are.equal(refs[false], refs[true])
  end)
end)

-- Repeat and timed launches checked on the device (issue 15): outputs whose digests
-- match the verified ones are the same bits; anything else is compared as at
-- verification, so a task that allows nondeterminism still passes within its tolerance.
describe("kloop.protocol: outputs checked by digest", function()
  local EIGHT = { budget = 0, min_reps = 8, max_reps = 8 }
  -- counts the candidate's launches per size in a global the module reload keeps
  local COUNTED = [[gemm = function(p)
    local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
    local key = "n" .. M
    _G.cnt = _G.cnt or {}
    _G.cnt[key] = (_G.cnt[key] or 0) + 1
    local k = _G.cnt[key]
    %s
  end]]
  before_each(function() _G.cnt = nil end)

  it("checks the outputs of every timed launch, not only the first two and the last", function()
    assert(protocol.setup(sim, SPEC, REF))
    -- bench launches: timed launches 1..8 (the bench size verified on them); the 4th is wrong
    local r = evaluate(COUNTED:format([[if M == 16 and k == 4 then C[5] = C[5] + 0.5 end]]), { timing = EIGHT })
    assert.are.equal("wrong", r.verdict, r.reason)
    assert.matches("timed launch 4", r.reason, 1, true)
  end)

  it("flags a repeat that differs from the verified run even when a third run matches the repeat", function()
    assert(protocol.setup(sim, SPEC, REF))
    -- exact on the two verified runs, then off by one part in 10^7 from the repeat on:
    -- verified before the timing (a timing too short to verify in: 2 repetitions for 2
    -- sets and a repeat), the repeat; verified on the timed launches, the third
    local COUNTED_OFF = COUNTED:format([[if M == 16 and k > 2 then C[0] = C[0] * (1 + 1e-7) end]])
    local r = evaluate(COUNTED_OFF, { timing = { budget = 0, min_reps = 2, max_reps = 2 } })
    assert.are.equal("nondeterministic", r.verdict, r.reason)
    assert.matches("bench", r.reason, 1, true)
    _G.cnt = nil
    local t = evaluate(COUNTED_OFF, { timing = EIGHT })
    assert.are.equal("nondeterministic", t.verdict, t.reason)
    assert.matches("timed launch 3: the outputs on input set 1 differ", t.reason, 1, true)
  end)

  it("calls different bits within the tolerance at a timed launch nondeterministic when the task asks for exact repeats", function()
    assert(protocol.setup(sim, SPEC, REF))
    -- exact through each set's first launch and the repeat, then one part in 10^6 off at the 4th
    local r = evaluate(COUNTED:format([[if M == 16 and k == 4 then C[0] = C[0] * (1 + 1e-6) end]]), { timing = EIGHT })
    assert.are.equal("nondeterministic", r.verdict, r.reason)
    assert.matches("timed launch 4", r.reason, 1, true)
  end)

  it("passes noise within the tolerance when the task allows nondeterminism", function()
    local spec = spec_for({ { label = "check1", M = 5, N = 7, K = 3 }, { label = "bench", M = 16, N = 16, K = 16, bench = true } })
    spec.tolerance = { rel = 1e-5, deterministic = "tolerance" }
    assert(protocol.setup(sim, spec, REF))
    local p = {}
    for _, c in ipairs(spec.cases) do p[c.label] = { { entry = "gemm", grid = { 1, 1, 1 }, block = { 1, 1, 1 }, smem = 0 } } end
    local req = { cubin = module(COUNTED:format([[C[0] = C[0] * (1 + 1e-7 * (k % 3))]])), plans = p, timing = EIGHT }
    local r = protocol.evaluate(sim, req)
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(8, r.reps)
    -- and a timed launch outside the tolerance is still wrong
    _G.cnt = nil
    req.cubin = module(COUNTED:format([[if M == 16 and k == 5 then C[0] = C[0] + 10 end]]))
    local w = protocol.evaluate(sim, req)
    assert.are.equal("wrong", w.verdict, w.reason)
    assert.matches("timed launch 5", w.reason, 1, true)
    assert(protocol.setup(sim, SPEC, REF))
  end)
end)

-- The bench size verified on its timed launches (issue 15): where every timed launch is
-- checked on the device and the timing has a launch per input set and one more, each
-- set's first timed launch is a verification launch, and the later ones repeat its bits.
describe("kloop.protocol: the bench size verified on its timed launches", function()
  local EIGHT = { budget = 0, min_reps = 8, max_reps = 8 }
  local COUNTED = [[gemm = function(p)
    local M, N, K, A, B, C = g.args(p)
    _G.cnt = (_G.cnt or 0) + (M == 16 and 1 or 0)
    local k = _G.cnt
    %s
  end]]
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)
  before_each(function() _G.cnt = nil end)
  local function bench_launches(body, timing)
    _G.cnt = nil
    local r = evaluate(COUNTED:format(body), { timing = timing or EIGHT })
    return r, _G.cnt or 0
  end

  it("launches the bench size in its timing and twice more on one load, and says so", function()
    local r, n = bench_launches("g.gemm(M, N, K, A, B, C)")
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(8 + 2, n)
    assert.are.equal(8, r.reps)
    assert.matches("verified on 3 sizes x 2 input sets; timed 8 repetitions (the bench size verified on its timed launches)",
      r.reason, 1, true)
  end)

  it("compares each set's first timed launch with the reference: wrong on the very first launch only", function()
    -- (its digests would be the ones the later launches repeat: it must be judged itself)
    local r = bench_launches("g.gemm(M, N, K, A, B, C) if M == 16 and k == 1 then C[3] = C[3] + 0.25 end")
    assert.are.equal("wrong", r.verdict, r.reason)
    assert.matches("input set 1, timed launch 1", r.reason, 1, true)
    local r2 = bench_launches("g.gemm(M, N, K, A, B, C) if M == 16 and k == 2 then C[3] = C[3] + 0.25 end")
    assert.are.equal("wrong", r2.verdict, r2.reason)
    assert.matches("input set 2, timed launch 2", r2.reason, 1, true)
  end)

  it("finds a kernel right only on the first launch after its module's load", function()
    -- (a count its module keeps, reset by each load: every timed launch is a first one)
    local function stale(from)
      return string.format([[gemm = (function() local n = 0 return function(p)
        local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
        if M == 16 then n = n + 1; if n >= %d then C[0] = C[0] + 1 end end end end)()]], from)
    end
    local r = evaluate(stale(2), { timing = EIGHT })
    assert.are.equal("wrong", r.verdict, r.reason)
    assert.matches("a second launch on one load", r.reason, 1, true)
    local r3 = evaluate(stale(3), { timing = EIGHT })
    assert.are.equal("nondeterministic", r3.verdict, r3.reason)
    assert.matches("the repeat on one load", r3.reason, 1, true)
    -- the cascade's full stage too
    local c = protocol.cascade(sim, { cubin = module(stale(2)), plans = plans(), screen_case = "check2",
      screen_timing = { min_reps = 3, max_reps = 3, budget = 0 }, timing = EIGHT })
    assert.are.equal("full", c.stage)
    assert.are.equal("wrong", c.verdict, c.reason)
  end)

  it("finds unwritten outputs and changed inputs on a timed launch", function()
    local u = bench_launches("if M ~= 16 or k ~= 2 then g.gemm(M, N, K, A, B, C) end")
    assert.are.equal("unwritten", u.verdict, u.reason)
    assert.are.equal("bench", u.evidence.case)
    local i = bench_launches("g.gemm(M, N, K, A, B, C) if M == 16 and k == 3 then A[0] = A[0] + 1 end")
    assert.are.equal("inputs_modified", i.verdict, i.reason)
    assert(protocol.setup(sim, SPEC, REF))
  end)

  it("verifies the bench size first where the timing is too short, or the checks are not on the device", function()
    local r, n = bench_launches("g.gemm(M, N, K, A, B, C)", { budget = 0, min_reps = 2, max_reps = 2 })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(3 + 2, n) -- 2 sets and the repeat, then the 2 timed
    assert.is_nil(r.reason:find("on its timed launches", 1, true))
    sim.checks_on_device = false
    _G.cnt = nil
    local h, hn = bench_launches("g.gemm(M, N, K, A, B, C)")
    sim.checks_on_device = true
    assert.are.equal("ok", h.verdict, h.reason)
    assert.are.equal(3 + 8, hn)
  end)
end)

-- A wait filled (issue 15): where the parent expects the GPU to wait for the next
-- candidate's compile (timing.fill), the timing goes on past its CI target until then,
-- never past its budget.
describe("kloop.protocol: timing through an expected wait", function()
  setup(function() assert(protocol.setup(sim, SPEC, REF)) end)
  local GOOD = [[gemm = function(p) g.gemm(g.args(p)) end]]
  -- a CI target any 3 repetitions meet: without a fill the timing stops at min_reps
  local LOOSE = { budget = 2, min_reps = 3, max_reps = 100000, target_ci = 10 }
  local function with(extra)
    local t = {}
    for k, v in pairs(LOOSE) do t[k] = v end
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  it("stops at the CI target without a fill, and goes on until the fill's end with one", function()
    local plain = evaluate(GOOD, { timing = with() })
    assert.are.equal("ok", plain.verdict, plain.reason)
    assert.are.equal(3, plain.reps)
    assert.is_nil(plain.fill_s)
    -- (the fill counts from the request's start: 0.5 s leaves room for the verification
    -- on a loaded machine, where the timing's own repetitions take a few milliseconds)
    local filled = evaluate(GOOD, { timing = with({ fill = 0.5 }) })
    assert.are.equal("ok", filled.verdict, filled.reason)
    assert.is_true(filled.reps > 3, "reps " .. filled.reps)
    assert.is_true(filled.eval_seconds >= 0.5, "eval " .. filled.eval_seconds)
    assert.are.equal(0.5, filled.fill_s)
  end)

  it("never times past the budget or max_reps for a fill", function()
    local capped = evaluate(GOOD, { timing = with({ fill = 5, budget = 0.05 }) })
    assert.are.equal("ok", capped.verdict, capped.reason)
    assert.is_true(capped.eval_seconds < 1.0, "eval " .. capped.eval_seconds)
    local few = evaluate(GOOD, { timing = with({ fill = 5, max_reps = 6 }) })
    assert.are.equal(6, few.reps)
  end)
end)

-- Outputs compared on the device (issue 15): the reference kept there masked, guarded
-- and checked with the worker's state; the verdicts and their evidence as on the host.
describe("kloop.protocol: comparison on the device", function()
  local min0
  setup(function()
    min0 = protocol.DEVICE_COMPARE_MIN
    protocol.DEVICE_COMPARE_MIN = 1
  end)
  teardown(function()
    protocol.DEVICE_COMPARE_MIN = min0
    sim.device_compare = true
    assert(protocol.setup(sim, SPEC, REF))
  end)

  local BODIES = {
    ok = [[gemm = function(p) g.gemm(g.args(p)) end]],
    wrong = [[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); C[5] = C[5] + 0.5 end]],
    unwritten = [[gemm = function(p) local M, N, K, A, B, C = g.args(p)
      local keep = C[3]; g.gemm(M, N, K, A, B, C); C[3] = keep end]],
    nan = [[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C); C[2] = 0/0 end]],
  }

  it("gives the host's verdicts and evidence, without reading the outputs back", function()
    for _, name in ipairs({ "ok", "wrong", "unwritten", "nan" }) do
      sim.device_compare = false
      assert(protocol.setup(sim, SPEC, REF))
      local host = evaluate(BODIES[name])
      sim.device_compare = true
      assert(protocol.setup(sim, SPEC, REF))
      local n0 = sim.compares_on_device
      local dev = evaluate(BODIES[name])
      assert.is_true(sim.compares_on_device > n0, name .. ": not compared on the device")
      assert.are.equal(name, dev.verdict, dev.reason)
      assert.are.equal(host.verdict, dev.verdict)
      if name ~= "ok" then
        assert.are.equal(host.reason, dev.reason)
        assert.are.equal(host.evidence.index, dev.evidence.index)
      end
    end
  end)

  -- the plain reference words of case 3, set s (the host path keeps them: the same
  -- seeds give the same reference on either path)
  local function plain_words(s, n)
    sim.mask_on_device = false
    assert(protocol.setup(sim, SPEC, REF))
    local r = protocol.debug_state().cases[3].sets[s].refs[6]
    assert.is_nil(r.backup)
    local p = require("ffi").cast("uint32_t*", r.host)
    local out = {}
    for k = 0, n - 1 do out[k] = p[k] end
    sim.mask_on_device = true
    return out
  end

  it("keeps the reference masked: a kernel that copies it into its output is wrong", function()
    sim.device_compare = true
    local plain = plain_words(1, 512)
    for _, on_dev in ipairs({ true, false }) do
      sim.mask_on_device = on_dev
      assert(protocol.setup(sim, SPEC, REF))
      local st = protocol.debug_state()
      local r = st.cases[3].sets[1].refs[6]
      assert.is_table(r.dev_buf, "the bench reference is not on the device")
      -- masked where it was computed: no plain copy on the host, a second copy on the device
      assert.are.equal(on_dev, r.host == nil)
      assert.are.equal(on_dev, r.backup ~= nil)
      local dev = require("ffi").cast("uint32_t*", r.dev_buf.ptr)
      local same = 0
      for k = 0, 511 do if dev[k] == plain[k] then same = same + 1 end end
      assert.is_true(same < 8, same .. " of 512 reference words readable on the device")
    end
    sim.mask_on_device = true
    assert(protocol.setup(sim, SPEC, REF))
    local v = evaluate([[gemm = function(p) local M, N, K, A, B, C = g.args(p)
      local st = require("kloop.worker.protocol").debug_state()
      local ref = st.cases[3].sets[1].refs[6].dev_buf
      if M == 16 then local d = ffi.cast("double*", ref.ptr) for i = 0, M * N - 1 do C[i] = d[i] end
      else g.gemm(M, N, K, A, B, C) end end]])
    -- (masked words read as floats are garbage: NaNs among them)
    assert.is_true(v.verdict == "wrong" or v.verdict == "nan", v.verdict .. ": " .. tostring(v.reason))
  end)

  it("gives every reference its own mask key: two masked references XORed are not the plain ones XORed", function()
    sim.device_compare = true
    assert(protocol.setup(sim, SPEC, REF))
    local st = protocol.debug_state()
    local r1, r2 = st.cases[3].sets[1].refs[6], st.cases[3].sets[2].refs[6]
    local ffi = require("ffi")
    local m1, m2 = ffi.cast("uint32_t*", r1.dev_buf.ptr), ffi.cast("uint32_t*", r2.dev_buf.ptr)
    local w1, w2 = {}, {}
    for k = 0, 511 do w1[k], w2[k] = m1[k], m2[k] end
    local p1, p2 = plain_words(1, 512), plain_words(2, 512)
    local same = 0
    for k = 0, 511 do if bit.bxor(w1[k], w2[k]) == bit.bxor(p1[k], p2[k]) then same = same + 1 end end
    assert.is_true(same < 8, same .. " of 512 words: the two masks are the same")
    assert.are_not.equal(r1.mask_seed, r2.mask_seed)
  end)

  it("compares on the host when the device has no room for a reference", function()
    local full = setmetatable({ alloc = function(bytes)
      local tb = debug.traceback()
      if tb:find("keep_on_device", 1, true) or tb:find("mask_on_device", 1, true) then
        return nil, "out of memory (simulated)"
      end
      return sim.alloc(bytes)
    end }, { __index = sim })
    sim.device_compare = true
    assert(protocol.setup(full, SPEC, REF))
    local n0 = sim.compares_on_device
    local ok = protocol.evaluate(full, { cubin = module(BODIES.ok), plans = plans(), timing = { budget = 0.05, min_reps = 3 } })
    assert.are.equal("ok", ok.verdict, ok.reason)
    local w = protocol.evaluate(full, { cubin = module(BODIES.wrong), plans = plans(), timing = { budget = 0.05, min_reps = 3 } })
    assert.are.equal("wrong", w.verdict, w.reason)
    assert.are.equal(n0, sim.compares_on_device, "a reference without room on the device was compared there")
  end)

  -- a candidate that also overwrites kloop's masked references of set `set` (the lines
  -- `writes`, with r the reference record): its verdict
  local function damaging(set, writes)
    sim.device_compare = true
    assert(protocol.setup(sim, SPEC, REF))
    return evaluate(string.format([[gemm = function(p) local M, N, K, A, B, C = g.args(p); g.gemm(M, N, K, A, B, C)
      local r = require("kloop.worker.protocol").debug_state().cases[3].sets[%d].refs[6]
      %s end]], set, writes))
  end

  it("catches a kernel that overwrites either copy of the reference, and restores it from the other", function()
    for _, c in ipairs({ { 2, "dev_buf", 7, "kloop's reference of C" }, { 1, "backup", 3, "second copy" } }) do
      local v = damaging(c[1], string.format('ffi.cast("uint32_t*", r.%s.ptr)[%d] = 0', c[2], c[3]))
      assert.are.equal("out_of_bounds", v.verdict, v.reason)
      assert.matches(c[4], v.reason, 1, true)
      assert.is_falsy(v.restart, c[2] .. ": the intact copy was not used to restore the other")
      local ok = evaluate(BODIES.ok)
      assert.are.equal("ok", ok.verdict, ok.reason)
    end
  end)

  it("catches a kernel that overwrites both copies of the reference, and the worker starts afresh", function()
    local v = damaging(2, 'ffi.cast("uint32_t*", r.dev_buf.ptr)[7] = 0; ffi.cast("uint32_t*", r.backup.ptr)[7] = 0')
    assert.are.equal("out_of_bounds", v.verdict, v.reason)
    -- no copy is left to restore from: the worker must not go on with a wrong reference
    assert.is_true(v.restart == true, "the worker went on after losing its reference")
    assert(protocol.setup(sim, SPEC, REF))
  end)
end)
