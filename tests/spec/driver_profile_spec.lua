-- tests/spec/driver_profile_spec.lua: the driver's side of profiling (ctx:profile): only
-- verified candidates, the summary kept on the result and in the store, "no counters"
-- said once, a bad metric list stops profiling for the run. The evaluator is a double.
local driver = require("kloop.search.driver")
local util = require("kloop.util")

local function fake_ev(reply)
  local ev = { calls = 0 }
  function ev:backend() return "cuda" end
  function ev:profile(src, opts)
    self.calls = self.calls + 1
    self.last_opts = opts
    return type(reply) == "function" and reply(self.calls) or reply
  end
  return ev
end

local function ctx_with(ev, opts)
  local o = { metrics = "", quiet = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  return setmetatable({ ev = ev, opts = o, history = {}, verdicts = {} }, driver.Ctx)
end

local function capture(fn)
  local said = {}
  local orig = util.eprintf
  util.eprintf = function(fmt, ...) said[#said + 1] = string.format(fmt, ...) end
  local ok, err = pcall(fn)
  util.eprintf = orig
  assert(ok, err)
  return said
end

describe("ctx:profile", function()
  it("profiles verified candidates once, with the evaluation's time, and keeps the summary", function()
    local ev = fake_ev({ verdict = "ok", profile = { bound = "compute", hints = {} } })
    local ctx = ctx_with(ev, { metrics = "+smsp__inst_executed.sum" })
    local cand = { source = "k", defines = { BM = 64 }, result = { verdict = "ok", time_ms = 4.5 } }
    local s = assert(ctx:profile(cand))
    assert.are.equal("compute", s.bound)
    assert.are.equal(s, cand.result.profile)
    assert.are.equal(4.5, ev.last_opts.time_ms)
    assert.is_true(ev.last_opts.verified)
    assert.are.equal("+smsp__inst_executed.sum", ev.last_opts.metrics)
    assert.are.same({ BM = 64 }, ev.last_opts.defines)
    ctx:profile(cand) -- already profiled: no second run
    assert.are.equal(1, ev.calls)
    local bad = { source = "k", result = { verdict = "wrong" } }
    local none, why = ctx:profile(bad)
    assert.is_nil(none)
    assert.matches("only verified", why)
    assert.are.equal(1, ev.calls)
  end)

  it("says once that there are no counters, and the run goes on", function()
    local ev = fake_ev({ verdict = "ok", profile = { no_counters = "profiling not permitted", hints = {} } })
    local ctx = ctx_with(ev)
    local said = capture(function()
      for i = 1, 3 do assert(ctx:profile({ source = "k" .. i, result = { verdict = "ok", time_ms = 1 } })) end
    end)
    assert.are.equal(1, #said)
    assert.matches("no hardware counters here %(profiling not permitted%)", said[1])
    assert.are.equal(3, ev.calls)
  end)

  it("stops profiling for the run after a usage error (an unknown metric), saying so", function()
    local ev = fake_ev({ verdict = "launch_error", usage = true, reason = "unknown metric 'x__y.sum' for chip GH100" })
    local ctx = ctx_with(ev)
    local said = capture(function()
      assert.is_nil((ctx:profile({ source = "a", result = { verdict = "ok", time_ms = 1 } })))
      local _, why = ctx:profile({ source = "b", result = { verdict = "ok", time_ms = 1 } })
      assert.matches("unknown metric", why)
    end)
    assert.are.equal(1, ev.calls)
    assert.are.equal(1, #said)
    assert.matches("profiling .* failed %(unknown metric", said[1])
  end)

  it("updates the store when the candidate was already recorded", function()
    local ev = fake_ev({ verdict = "ok", profile = { bound = "memory", hints = {} } })
    local ctx = ctx_with(ev)
    local recorded
    ctx.store = { record_profile = function(_, c) recorded = c end }
    local cand = { source = "k", evaluation_store_id = 7, result = { verdict = "ok", time_ms = 1 } }
    ctx:profile(cand)
    assert.are.equal(cand, recorded)
  end)

  it("does nothing on the host backend", function()
    local ev = fake_ev({ verdict = "ok", profile = {} })
    function ev:backend() return "host" end
    local none, why = ctx_with(ev):profile({ source = "k", result = { verdict = "ok", time_ms = 1 } })
    assert.is_nil(none)
    assert.matches("cuda backend", why)
    assert.are.equal(0, ev.calls)
  end)
end)
