-- tests/spec/fill_spec.lua: a batch that would wait for its compilers while nothing of
-- the next batch is ready runs a point the strategy's think offered to fill the wait
-- (think's list .spare; kloop.search.driver Ctx:spares): as a candidate of its own,
-- settled after the batch, within the budget's room once the next batch is counted,
-- never one of either batch; tune offers the top of its guess (--fill). The evaluator
-- is a double whose first_ready takes the candidates in a given finishing order.
local driver = require("kloop.search.driver")

package.path = "tests/spec/support/?.lua;" .. package.path
local fx = require("batch_fixture")
local OK, cands, protected = fx.OK, fx.cands, fx.protected

-- finish: the sources in the order their binaries are ready; compiling: the sources not
-- compiled when the batch starts (every other one is)
local function setup(finish, compiling, opts)
  local ev = fx.fake_ev(finish, compiling)
  local o = fx.opts(opts)
  local ctx = setmetatable({ ev = ev, opts = o, history = { { source = "base", proposer = "baseline", result = OK(100) } },
    verdicts = {}, stages = {}, done_keys = {}, pre = {}, t0 = require("kloop.core.sys").now() }, driver.Ctx)
  ctx.best = ctx.history[1]
  local S = { seen = {} }
  function S.on_result(_, cand) S.seen[#S.seen + 1] = cand.source end
  return ev, ctx, S
end

-- think as tune's: the next batch exactly, and spares past it (at most max of them)
local function thinking(S, nexts, spares, max)
  function S.think()
    local l = cands(unpack(nexts))
    l.exact = true
    l.spare = cands(unpack(spares))
    l.spare.max = max
    return l
  end
end

-- The sources of the evaluator's first first_ready list (the batch, the next batch's
-- and the spares the driver offered), read by the function returned.
local function capture_offered(ev)
  local inner, offered = ev.first_ready, nil
  function ev:first_ready(list, more)
    local k = inner(self, list, more)
    if not offered then
      offered = {}
      for i, c in ipairs(list) do offered[i] = c.source end
    end
    return k
  end
  return function() return offered end
end

local function run(ctx, S, batch)
  local list = ctx:fresh_batch(batch)
  local order = assert(ctx:ready_order(list, S.think ~= nil and ctx.ev.on_sent ~= nil), "the batch ran in proposal order")
  return ctx:evaluate_ready_first(list, order, S, protected)
end

describe("filling a batch's compile wait with a point think offered", function()
  it("runs a spare only when nothing of this batch or the next is ready, and settles it after the batch", function()
    -- a and b compile; n1 and n2 (the next batch) too; s1 is ready first
    local ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true, n1 = true, n2 = true, s2 = true })
    thinking(S, { "n1", "n2" }, { "s1", "s2" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "s1", "a", "b" }, ev.calls)
    assert.are.same({ "a", "b", "s1" }, S.seen, "the spare settles after the batch's own")
    local s1 = ctx.history[#ctx.history]
    assert.are.equal("s1", s1.source)
    assert.is_true(s1.result.filled)
    assert.is_nil(ctx.history[2].result.filled)
    assert.is_nil(next(ctx.pre), "a spare is no result run ahead for the next batch")
    -- the next batch is as think named it: nothing broken, nothing of it dropped
    assert.is_nil(ctx.exact_broken)
    assert.are.equal(2, #ctx:fresh_batch(cands("n1", "n2")))
    assert.is_true(ctx.done_keys[driver.key(s1)])
  end)

  it("prefers the next batch's ready candidate to a spare", function()
    -- (n1 and s1 both compiled: the evaluator takes the first ready of its list, where
    -- the next batch's come before the spares)
    local ev, ctx, S = setup({ "n1", "a", "b" }, { a = true, b = true })
    thinking(S, { "n1", "n2" }, { "s1" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    local offered = capture_offered(ev)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "b", "n1", "n2", "s1" }, offered(), "the spares come after the next batch")
    assert.are.same({ "n1", "a", "b" }, ev.calls)
    assert.are.same({ "a", "b" }, S.seen)
    assert.is_truthy(ctx.pre[driver.key(cands("n1")[1])])
  end)

  it("never runs a spare the budget has no room for once the next batch is counted", function()
    -- budget 5: base, a, b (2), next n1 n2 (2): room for one spare
    local ev, ctx, S = setup({ "s1", "s2", "a", "b" }, { a = true, b = true, n1 = true, n2 = true },
      { budget = 5 })
    thinking(S, { "n1", "n2" }, { "s1", "s2" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "s1", "a", "b" }, ev.calls, "a second spare would overrun the budget")
    -- the next batch still fits whole
    assert.are.equal(2, #ctx:fresh_batch(cands("n1", "n2")))
    -- and with no room at all, none
    ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true, n1 = true, n2 = true }, { budget = 4 })
    thinking(S, { "n1", "n2" }, { "s1" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "b" }, ev.calls)
  end)

  it("runs no more spares in a batch than the list's max", function()
    local ev, ctx, S = setup({ "s1", "s2", "s3", "a", "b" }, { a = true, b = true, n1 = true })
    thinking(S, { "n1" }, { "s1", "s2", "s3" }, 2)
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "s1", "s2", "a", "b" }, ev.calls)
    -- max 0: none
    ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true, n1 = true })
    function S.think()
      local l = cands("n1")
      l.exact, l.spare = true, cands("s1")
      l.spare.max = 0
      return l
    end
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_nil(ctx.next_spare)
  end)

  -- the driver takes the offered points compiled already before those still compiling
  -- (tune offers its guess past the batch, best first: its top may still compile)
  it("fills a wait with the offered points compiled already, before those still compiling", function()
    -- s1 and s2 compile; s3 is compiled; one spare allowed
    local ev, ctx, S = setup({ "s3", "s1", "a", "b" }, { a = true, b = true, n1 = true, s1 = true, s2 = true })
    thinking(S, { "n1" }, { "s1", "s2", "s3" }, 1)
    ctx:arm_think(S, 2)
    ev.on_sent()
    local offered = capture_offered(ev)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "b", "n1", "s3" }, offered(), "the spare offered is not the compiled one")
    assert.are.same({ "s3", "a", "b" }, ev.calls)
    -- a point whose compile failed is no filler: one still compiling comes before it
    ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true, n1 = true, s1 = true })
    ev.failed = { s2 = true }
    thinking(S, { "n1" }, { "s2", "s1" }, 1)
    ctx:arm_think(S, 2)
    ev.on_sent()
    offered = capture_offered(ev)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "b", "n1", "s1" }, offered(), "a failed compile filled the wait")
  end)

  it("offers no point of this batch or the next, and nothing without exact or with a time budget", function()
    local ev, ctx, S = setup({ "a", "b" }, { a = true, b = true, n1 = true })
    thinking(S, { "n1" }, { "n1", "a" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.are.equal(1, #ctx.next_spare, "n1 is the next batch's")
    assert.are.equal("a", ctx.next_spare[1].source)
    local list = ctx:fresh_batch(cands("a", "b"))
    for _, c in ipairs(list) do ctx.done_keys[driver.key(c)] = true end
    ctx.next_spare = cands("a")
    ctx.next_spare.max = 1
    assert.are.same({}, ctx:spares(3), "a is this batch's")
    -- a think list without exact offers nothing
    ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true })
    function S.think() local l = cands("n1") l.spare = cands("s1") return l end
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.is_nil(ctx.next_spare)
    -- a time budget: nothing fills (what runs must not depend on the clock's cut)
    ev, ctx, S = setup({ "s1", "a", "b" }, { a = true, b = true, n1 = true }, { time = 60 })
    thinking(S, { "n1" }, { "s1" })
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.are.same({}, ctx:spares(3))
    -- nor once the strategy broke its exact promise
    ctx.opts.time = 0
    assert.are.equal(1, #ctx:spares(3))
    ctx.exact_broken = true
    assert.are.same({}, ctx:spares(3))
  end)

  it("runs ready-first when only the last candidate compiles, so the wait can be filled", function()
    local ev, ctx, S = setup({ "a", "s1", "b" }, { b = true, n1 = true })
    local list = ctx:fresh_batch(cands("a", "b"))
    assert.is_nil(ctx:ready_order(list), "without think nothing could move")
    thinking(S, { "n1" }, { "s1" })
    ctx:arm_think(S, 2)
    assert.are.same({ 1, 2 }, ctx:ready_order(list, true))
    ev.on_sent()
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "s1", "b" }, ev.calls)
    assert.are.same({ "a", "b", "s1" }, S.seen)
  end)
end)

-- the real Evaluator:first_ready: think fires in the batch's first wait, and what it
-- names fills that very wait (a one-candidate batch whose binary compiles)
describe("the batch's first wait", function()
  it("runs a ready spare that think named in that wait", function()
    local eval = require("kloop.eval.evaluator")
    local compile = require("kloop.eval.compile")
    local ev = eval.new({ backend = "cuda", name = "t" }, {})
    local ready = { s1 = true }
    ev.backend = function() return "cuda" end
    ev.arch = "sm_90"
    ev.compile_counts = function(_, c) if ready[c.source] then return 1, 0, 0 end return 0, 1, 0 end
    ev.compiled = function(_, c) return ready[c.source] == true end
    ev.queue_compiles = function() end
    ev.count_wait = function() end
    ev.calls = {}
    ev.evaluate = function(self, src)
      self.calls[#self.calls + 1] = src
      ready.a = true -- (a's compile ends while another candidate runs)
      return OK(#src + 1)
    end
    ev.compare = function() return { a = OK(100), b = OK(2), ratio = 50, ratio_ci = { 49, 51 }, blocks = 6 } end
    local pump, pumps = compile.pump, 0
    compile.pump = function() pumps = pumps + 1 if pumps > 50 then ready.a = true end end
    local ctx = setmetatable({ ev = ev, opts = { quiet = true, profile = "none", timing_budget = 0.1, cascade = "off",
      budget = 100, time = 0, tokens = 0, money = 0 }, history = { { source = "base", proposer = "baseline",
      result = OK(100) } }, verdicts = {}, stages = {}, done_keys = {}, pre = {}, t0 = 0 }, driver.Ctx)
    ctx.best = ctx.history[1]
    local S = { seen = {} }
    function S.on_result(_, cand) S.seen[#S.seen + 1] = cand.source end
    thinking(S, { "n1" }, { "s1" })
    ctx:arm_think(S, 1)
    local ok, rok, msg = pcall(run, ctx, S, cands("a"))
    compile.pump = pump
    assert.is_true(ok, tostring(rok))
    assert.is_true(rok, tostring(msg))
    assert.are.same({ "s1", "a" }, ev.calls, "s1 was ready in a's first wait and did not run")
    assert.are.same({ "a", "s1" }, S.seen)
    assert.is_true((ev.spent.think or 0) >= 0)
  end)
end)

describe("tune's spares (--fill)", function()
  local rng = require("kloop.search.rng")
  local tune = require("kloop.search.tune")
  local function tune_ctx(fill, budget)
    local S = dofile("strategies/tune.lua")
    local params = { X = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, Y = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 } }
    local ctx = { task = { name = "t", source = "k", params = params }, history = {}, rng = rng.new(5),
      opts = { budget = budget or 60, batch = 4, method = "model", init = 0, stop_ei = 0, explore = 0.3, quiet = true,
        ahead = "on", ahead_batch = 0, fill = fill } }
    ctx.history[1] = { proposer = "baseline", result = { verdict = "ok", time_ms = 1e9 } }
    S.init(ctx)
    return S, ctx
  end
  local function evaluate(S, ctx, list)
    for _, c in ipairs(list) do
      c.result = { verdict = "ok", time_ms = (c.defines.X - 3) ^ 2 + (c.defines.Y - 6) ^ 2 + 1 }
      ctx.history[#ctx.history + 1] = c
      S.on_result(ctx, c, c.result)
    end
  end

  -- the batch think names exactly lets the driver carry a straggler past it (spill)
  -- only where filling is on: a run that fills already depends on the compilers' timing
  it("lets a straggler be carried past the batch it names only where it fills", function()
    for _, fill in ipairs({ 2, 0 }) do
      local S, ctx = tune_ctx(fill)
      local spills, named = 0, 0
      while #ctx.history < 40 do
        local batch = S.propose(ctx)
        local t = S.think(ctx)
        if t and t.exact then
          named = named + 1
          if t.spill then spills = spills + 1 end
        end
        evaluate(S, ctx, batch)
      end
      assert.is_true(named > 0)
      assert.are.equal(fill > 0 and named or 0, spills, "fill " .. fill)
    end
  end)

  it("offers the top of its guess past the batch think chose, seen from its result on", function()
    local S, ctx = tune_ctx(2)
    local thought
    while #ctx.history < 40 do
      local batch = S.propose(ctx)
      assert.is_true(#batch > 0)
      -- (the first batch think chooses, ahead: before it, think names only the rest of
      -- the random start, which no result moves)
      thought = S.think(ctx)
      evaluate(S, ctx, batch)
      if thought and ctx.next_batch then break end
    end
    assert.is_table(thought, "think chose no batch in 40 evaluations")
    assert.are.equal(2, thought.spare.max)
    assert.is_true(#thought.spare > 2, "only the top of the guess offered")
    local named = {}
    for _, c in ipairs(thought) do named[tune.key(c.defines)] = true end
    for i, c in ipairs(thought.spare) do
      assert.is_nil(named[tune.key(c.defines)], "a spare of think's own batch")
      assert.are.same(ctx.guess[i].defines, c.defines, "not the top of the guess")
    end
    -- the driver runs one: from its result on, tune never proposes it
    local s = thought.spare[1]
    evaluate(S, ctx, { s })
    local nxt = S.propose(ctx)
    for k, c in ipairs(nxt) do
      assert.are.same(thought[k].defines, c.defines, "the next batch is not think's")
      assert.are_not.same(s.defines, c.defines)
    end
    for _ = 1, 3 do
      for _, c in ipairs(S.upcoming(ctx, 16)) do assert.are_not.same(s.defines, c.defines) end
      evaluate(S, ctx, nxt)
      nxt = S.propose(ctx)
      for _, c in ipairs(nxt) do assert.are_not.same(s.defines, c.defines, "a filled point proposed again") end
    end
  end)

  it("offers nothing with --fill 0 and refuses a bad --fill", function()
    local S, ctx = tune_ctx(0)
    for _ = 1, 10 do
      local batch = S.propose(ctx)
      local t = S.think(ctx)
      if t then assert.is_nil(t.spare) end
      evaluate(S, ctx, batch)
    end
    -- --ahead-after auto: choosing ahead from 8 evaluations in a search of 80 or more,
    -- from 16 below; and think then chooses after 8 results
    assert.are.equal(16, select(2, tune_ctx("auto", 79)).ahead_after)
    local S8, c8 = tune_ctx("auto", 80)
    assert.are.equal(8, c8.ahead_after)
    local first_think
    while #c8.history < 30 and not first_think do
      local batch = S8.propose(c8)
      if S8.think(c8) and c8.next_batch then first_think = #c8.history - 1 end
      evaluate(S8, c8, batch)
    end
    assert.is_true(first_think ~= nil and first_think >= 8 and first_think < 16, tostring(first_think))
    -- auto: 2 in a search of 64 or more, none in a smaller one
    assert.are.equal(0, select(2, tune_ctx("auto", 63)).fill)
    assert.are.equal(2, select(2, tune_ctx("auto", 64)).fill)
    assert.are.equal(2, select(2, tune_ctx("auto", 100)).fill)
    for _, bad in ipairs({ -1, 1.5, "x" }) do
      local S2 = dofile("strategies/tune.lua")
      local c2 = { task = { name = "t", source = "k", params = { X = { 1, 2 } } }, history = {}, rng = rng.new(1),
        opts = { budget = 10, batch = 4, method = "model", init = 0, fill = bad, ahead = "on", ahead_batch = 0 } }
      local ok, err = pcall(S2.init, c2)
      assert.is_false(ok)
      assert.matches("%-%-fill must be auto or a whole number", tostring(err))
      c2.opts.fill, c2.opts.ahead_after = 0, bad
      ok, err = pcall(S2.init, c2)
      assert.is_false(ok)
      assert.matches("%-%-ahead%-after must be auto or a whole number", tostring(err))
    end
  end)
end)
