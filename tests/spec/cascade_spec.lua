-- tests/spec/cascade_spec.lua: the driver's side of the evaluation cascade (ctx:evaluate
-- with --cascade on): who is screened, who is promoted to the full protocol, what a
-- strategy sees, and that only full evaluations are bests. The evaluator is a double.
local driver = require("kloop.search.driver")

local OK = function(ms) return { verdict = "ok", time_ms = ms } end

-- scripted: source -> {screen = result, full = result}; calls logs "screen x" / "full x"
local function fake_ev(script)
  local ev = { calls = {} }
  local function copy(t) local o = {} for k, v in pairs(t) do o[k] = v end return o end
  function ev:backend() return "host" end
  function ev:screen(src)
    self.calls[#self.calls + 1] = "screen " .. src
    local r = copy(assert(script[src].screen, "no screen for " .. src))
    r.stage = "screened"
    return r
  end
  function ev:evaluate(src)
    self.calls[#self.calls + 1] = "full " .. src
    local r = copy(assert(script[src].full, "no full result for " .. src))
    r.stage = "full"
    return r
  end
  -- the crowning A/B: the scripted full times, measured again without noise
  function ev:compare(src_a, src_b)
    self.calls[#self.calls + 1] = "ab " .. src_a .. " " .. src_b
    local ta, tb = script[src_a].full.time_ms, script[src_b].full.time_ms
    local ci = script[src_b].ab_ci or { ta / tb, ta / tb }
    return { a = OK(ta), b = OK(tb), ratio = ta / tb, ratio_ci = ci, blocks = 6, order = "ABBA" }
  end
  return ev
end

local function ctx_with(ev, opts)
  local o = { quiet = true, profile = "none", timing_budget = 0.1, cascade = "on", cascade_margin = 1.5,
    screen_reps = 3, budget = 100 }
  for k, v in pairs(opts or {}) do o[k] = v end
  return setmetatable({ ev = ev, opts = o, history = {}, verdicts = {}, stages = {} }, driver.Ctx)
end


describe("the evaluation cascade (ctx:evaluate)", function()
  it("screens, promotes within the margin of the best screen, and takes bests from full evaluations only", function()
    local ev = fake_ev({
      base = { screen = OK(1.0), full = OK(3.0) },
      near = { screen = OK(1.4), full = OK(2.5) },      -- within 1.5 x 1.0: promoted
      far = { screen = OK(1.8) },                        -- 1.8 > 1.5: screened only, though below the best full
      liar = { screen = OK(0.5), full = { verdict = "wrong", reason = "check1" } }, -- wrong on another size
      after = { screen = OK(1.45), full = OK(2.4) },     -- the liar's screen is no reference: promoted
      bad = { screen = { verdict = "wrong", reason = "check2" } },
      asked = { full = OK(5.0) },                        -- full = true: straight to full
    })
    local ctx = ctx_with(ev)
    local base = { source = "base", proposer = "baseline" }
    ctx:evaluate(base)
    ctx.baseline = base
    assert.are.equal("full", base.result.stage)
    assert.are.equal(1.0, base.result.screen.time_ms)
    assert.are.equal(base, ctx.best)
    local near = { source = "near", proposer = "tune" }
    ctx:evaluate(near)
    assert.are.equal("full", near.result.stage)
    assert.are.equal(near, ctx.best)
    local far = { source = "far", proposer = "tune" }
    local r = ctx:evaluate(far)
    assert.are.equal("screened", r.stage)
    assert.are.equal("ok", r.verdict)
    assert.are.equal(near, ctx.best) -- 1.8 ms screened is never a best over 2.5 ms full
    assert.is_nil(far.improved)
    local liar = { source = "liar", proposer = "tune" }
    ctx:evaluate(liar)
    assert.are.equal("wrong", liar.result.verdict)
    assert.are.equal("full", liar.result.stage)
    assert.are.equal(near, ctx.best)
    local after = { source = "after", proposer = "tune" }
    ctx:evaluate(after)
    assert.are.equal("full", after.result.stage)
    assert.are.equal(after, ctx.best)
    local bad = { source = "bad", proposer = "tune" }
    ctx:evaluate(bad)
    assert.are.equal("wrong", bad.result.verdict)
    assert.are.equal("screened", bad.result.stage)
    local asked = { source = "asked", proposer = "tune", full = true }
    ctx:evaluate(asked)
    assert.are.equal("full", asked.result.stage)
    assert.is_nil(asked.result.screen)
    -- a full result faster than the best is crowned by an A/B against it, never by its median
    assert.are.same({ "screen base", "full base", "screen near", "full near", "ab base near", "screen far", "screen liar",
      "full liar", "screen after", "full after", "ab near after", "screen bad", "full asked" }, ev.calls)
    -- each candidate counts once against the budget, whatever stage it reached
    assert.are.equal(7, #ctx.history)
    assert.are.same({ full = 5, screened = 2 }, ctx.stages)
  end)

  it("sends both stages in one request after the baseline, with the margin's bound, and keeps the same bests", function()
    local script = {
      base = { screen = OK(1.0), full = OK(3.0) },
      near = { screen = OK(1.4), full = OK(2.5) },
      far = { screen = OK(1.8) },
      liar = { screen = OK(0.5), full = { verdict = "wrong", reason = "check1" } },
      after = { screen = OK(1.45), full = OK(2.4) },
      faster = { screen = OK(0.8), full = OK(2.3) },
      slow = { screen = OK(1.25) },                      -- 1.25 > 1.5 x 0.8: the bound followed the new best screen
    }
    local ev = fake_ev(script)
    -- the worker's side (kloop.worker.protocol cascade): screen, and full when within the bound
    function ev:cascade(src, opts, below)
      self.calls[#self.calls + 1] = string.format("cascade %s %.2f", src, below)
      assert.are.equal(3, opts.reps)
      local s = script[src].screen
      local r = {}
      if s.verdict == "ok" and s.time_ms <= below then
        for k, v in pairs(script[src].full) do r[k] = v end
        r.stage, r.screen = "full", { verdict = s.verdict, time_ms = s.time_ms, reps = 3, screen_case = "check2" }
      else
        for k, v in pairs(s) do r[k] = v end
        r.stage = "screened"
      end
      return r
    end
    local ctx = ctx_with(ev)
    local base = { source = "base", proposer = "baseline" }
    ctx:evaluate(base)
    ctx.baseline = base
    local c = {}
    for _, name in ipairs({ "near", "far", "liar", "after", "faster", "slow" }) do
      c[name] = { source = name, proposer = "tune" }
      ctx:evaluate(c[name])
    end
    -- the baseline as before (two requests: it seeds the reference); then one request each
    assert.are.same({ "screen base", "full base", "cascade near 1.50", "ab base near", "cascade far 1.50",
      "cascade liar 1.50", "cascade after 1.50", "ab near after", "cascade faster 1.50", "ab after faster",
      "cascade slow 1.20" }, ev.calls)
    assert.are.equal("full", c.near.result.stage)
    assert.are.same({ verdict = "ok", time_ms = 1.4, reps = 3, case = "check2" }, c.near.result.screen)
    assert.are.equal("screened", c.far.result.stage)
    assert.are.equal("full", c.liar.result.stage)
    assert.are.equal("wrong", c.liar.result.verdict)
    assert.are.equal("screened", c.slow.result.stage)
    assert.are.equal(c.faster, ctx.best)
    assert.are.same({ full = 5, screened = 2 }, ctx.stages)
  end)

  it("with the cascade off, evaluates every candidate fully, as before", function()
    local ev = fake_ev({ a = { full = OK(2.0) }, b = { full = OK(1.0) } })
    local ctx = ctx_with(ev, { cascade = "off" })
    ctx:evaluate({ source = "a", proposer = "baseline" })
    ctx:evaluate({ source = "b", proposer = "tune" })
    assert.are.same({ "full a", "full b", "ab a b" }, ev.calls)
    assert.are.same({ full = 2 }, ctx.stages)
    assert.are.equal("b", ctx.best.source)
  end)

  it("promotes a screened candidate when the strategy asks (ctx:promote), without spending budget", function()
    local ev = fake_ev({ base = { screen = OK(1.0), full = OK(3.0) }, far = { screen = OK(2.0), full = OK(2.9) },
      bad = { screen = { verdict = "wrong" } } })
    local ctx = ctx_with(ev)
    ctx:evaluate({ source = "base", proposer = "baseline" })
    local far = { source = "far", proposer = "tune" }
    ctx:evaluate(far)
    assert.are.equal("screened", far.result.stage)
    local r = assert(ctx:promote(far))
    assert.are.equal("full", r.stage)
    assert.are.equal(2.0, r.screen.time_ms)
    assert.are.equal(far, ctx.best)
    assert.are.equal(r, far.result)
    assert.are.same({ full = 2 }, { full = ctx.stages.full, screened = ctx.stages.screened ~= 0 and ctx.stages.screened or nil })
    assert.are.equal(2, #ctx.history)
    local bad = { source = "bad", proposer = "tune" }
    ctx:evaluate(bad)
    local none, why = ctx:promote(bad)
    assert.is_nil(none)
    assert.matches("screen failed", why)
  end)

  it("keeps a candidate whose median beats the best's but whose A/B does not confirm ok, not best", function()
    local ev = fake_ev({ base = { full = OK(3.0) }, lucky = { full = OK(2.0), ab_ci = { 0.97, 1.04 } } })
    local ctx = ctx_with(ev, { cascade = "off" })
    local base = { source = "base", proposer = "baseline" }
    ctx:evaluate(base)
    local lucky = { source = "lucky", proposer = "tune" }
    local r = ctx:evaluate(lucky)
    assert.are.equal("ok", r.verdict)
    assert.are.equal(base, ctx.best)
    assert.is_false(r.crowned)
    assert.is_false(r.ab.faster)
    assert.are.same({ 0.97, 1.04 }, r.ab.ratio_ci)
    assert.matches("not faster", r.ab.why)
    -- the sentinel evaluating it again changes nothing
    ctx:reevaluated(r)
    assert.are.equal(base, ctx.best)
  end)

  it("does not profile a screened result", function()
    local ctx = ctx_with(fake_ev({}))
    local none, why = ctx:profile({ source = "x", result = { verdict = "ok", stage = "screened", time_ms = 1 } })
    assert.is_nil(none)
    assert.matches("screened", why)
  end)
end)
