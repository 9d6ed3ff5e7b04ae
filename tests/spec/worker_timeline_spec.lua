-- tests/spec/worker_timeline_spec.lua: the timeline's idle split (kloop.worker.trace
-- idle_split, bench/eval_breakdown.lua TIMELINE=1): where the GPU idled inside a
-- request, split over the backend calls that ran meanwhile, the rest as the worker's own
-- Lua, and over the GPU operations on either side of each idle stretch.
local trace = require("kloop.worker.trace")

local function op(name, a, b) return { name = name, start_ns = a, end_ns = b } end

describe("the timeline's idle split", function()
  it("splits each idle stretch over the calls that ran in it, the rest as the worker's Lua", function()
    -- request 0..1000 ns; the GPU runs 100-300 (cand), 350-400 (check), 390-600 (a copy
    -- overlapping it), 900-950 (flush)
    local recs = { op("flush", 900, 950), op("cand", 100, 300), op("check", 350, 400), op("[memcpy DtoD 64]", 390, 600) }
    -- calls: timer_read 250-320 (its tail idles 300-320), check_regions 320-345 (idle),
    -- load 620-800 (idle), launch 880-905 (idle until 900)
    local spans = { { "timer_read", 250, 320 }, { "check_regions", 320, 345 }, { "load", 620, 800 },
      { "launch", 880, 905 } }
    local out = trace.idle_split(recs, spans, 0, 1000)
    -- idle: 0-100, 300-350, 600-900, 950-1000 = 100 + 50 + 300 + 50
    assert.are.equal(500, math.floor(out.idle * 1e9 + 0.5))
    assert.are.equal(500, math.floor(out.busy * 1e9 + 0.5))
    assert.are.equal(4, out.gaps)
    assert.are.equal(4, out.ops)
    local ns = {}
    for k, v in pairs(out.by_call) do ns[k] = math.floor(v * 1e9 + 0.5) end
    assert.are.same({ timer_read = 20, check_regions = 25, load = 180, launch = 20,
      _lua = 100 + 5 + 100 + 50 }, ns)
    assert.are.equal(1, out.by_pair["start -> cand"].n)
    assert.are.equal(1, out.by_pair["cand -> check"].n)
    assert.are.equal(300, math.floor(out.by_pair["[memcpy DtoD 64] -> flush"].s * 1e9 + 0.5))
    assert.are.equal(50, math.floor(out.by_pair["flush -> end"].s * 1e9 + 0.5))
    -- the busy time by operation, a copy's size dropped from its name
    assert.are.equal(210, math.floor(out.by_op["[memcpy DtoD]"].s * 1e9 + 0.5))
    assert.are.equal(200, math.floor(out.by_op.cand.s * 1e9 + 0.5))
    assert.are.equal(1, out.by_op.flush.n)
  end)

  it("clips activities to the request and counts stretches under min_ns as busy", function()
    local recs = { op("before", -50, 10), op("a", 20, 40), op("b", 45, 90), op("after", 95, 200) }
    local out = trace.idle_split(recs, {}, 0, 100, 8)
    assert.are.equal(10, math.floor(out.by_op.before.s * 1e9 + 0.5)) -- (clipped to the request)
    -- gaps 10-20 (10 ns, counted), 40-45 (5 ns, under min: busy), 90-95 (5 ns, busy)
    assert.are.equal(1, out.gaps)
    assert.are.equal(10, math.floor(out.idle * 1e9 + 0.5))
    assert.are.equal(90, math.floor(out.busy * 1e9 + 0.5))
    assert.are.equal(10, math.floor(out.by_call._lua * 1e9 + 0.5))
  end)

  it("times a call made inside another as its own: the outer one's spans and seconds are cut around it", function()
    -- the protocol's `beside` runs backend calls (a module's load) inside check_regions
    local now = 0
    local function clock() now = now + 10 return now end
    local be = { outer = function(cb) cb() end, inner = function() end }
    local acc, spans = {}, {}
    local w = trace.wrap(be, acc, spans, clock)
    w.outer(function() w.inner() end)
    -- outer 10-20, inner 20-30, outer 30-40: in order, none overlapping
    assert.are.same({ { "outer", 10, 20 }, { "inner", 20, 30 }, { "outer", 30, 40 } }, spans)
    assert.are.equal(1, acc.outer.n)
    assert.are.equal(1, acc.inner.n)
    -- a gap over all three is split once: its length, not more
    local out = trace.idle_split({}, spans, 10, 40)
    assert.are.equal(20, math.floor(out.by_call.outer * 1e9 + 0.5))
    assert.are.equal(10, math.floor(out.by_call.inner * 1e9 + 0.5))
    assert.is_nil(out.by_call._lua)
    -- an error inside leaves the stack as it was: the next call is not nested in it
    local bad = trace.wrap({ boom = function() error("x") end, inner = function() end }, {}, {}, clock)
    assert.has_error(function() bad.boom() end)
    local after = {}
    local w2 = trace.wrap({ f = function() end }, {}, after, clock)
    w2.f()
    assert.are.equal(1, #after)
  end)

  it("counts a whole request with nothing on the GPU as idle", function()
    local out = trace.idle_split({}, { { "sync", 10, 30 } }, 0, 100)
    assert.are.equal(100, math.floor(out.idle * 1e9 + 0.5))
    assert.are.equal(20, math.floor(out.by_call.sync * 1e9 + 0.5))
    assert.are.equal(1, out.by_pair["start -> end"].n)
  end)
end)
