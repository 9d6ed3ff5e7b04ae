-- tests/spec/ready_first_spec.lua: one worker, a batch whose binaries are not all
-- compiled (kloop.search.driver Ctx:ready_order / evaluate_ready_first): the compiled
-- candidates run first, and the results are settled in proposal order, so bests,
-- records and what the strategy sees do not depend on the compilers' timing. The
-- evaluator is a double.
local driver = require("kloop.search.driver")
package.path = "tests/spec/support/?.lua;" .. package.path

local OK = function(ms) return { verdict = "ok", time_ms = ms } end

local function fake_ev(times, compiled)
  local ev = { calls = {} }
  function ev:backend() return "cuda" end
  function ev:compiled(c) return compiled[c.source] ~= false end
  function ev:fire_think() local f = self.on_sent self.on_sent = nil if f then f() end end
  function ev:evaluate(src)
    self.calls[#self.calls + 1] = "full " .. src
    local r = OK(assert(times[src], "no time for " .. src))
    r.stage = "full"
    return r
  end
  function ev:compare(src_a, src_b)
    self.calls[#self.calls + 1] = "ab " .. src_a .. " " .. src_b
    local ta, tb = times[src_a], times[src_b]
    return { a = OK(ta), b = OK(tb), ratio = ta / tb, ratio_ci = { ta / tb, ta / tb }, blocks = 6, order = "ABBA" }
  end
  return ev
end

local function ctx_with(ev, opts)
  local o = { quiet = true, profile = "none", timing_budget = 0.1, cascade = "off", budget = 100, time = 0,
    tokens = 0, money = 0 }
  for k, v in pairs(opts or {}) do o[k] = v end
  return setmetatable({ ev = ev, opts = o, history = {}, verdicts = {}, stages = {}, done_keys = {},
    t0 = require("kloop.core.sys").now() }, driver.Ctx)
end

local function cands(...)
  local out = {}
  for _, s in ipairs({ ... }) do out[#out + 1] = { source = s, proposer = "tune" } end
  return out
end

local function protected(_, fn, ...) return pcall(fn, ...) end

-- the driver's one-worker step: the fresh candidates, their order, then the run
local function ready_order(ctx, batch) return ctx:ready_order(ctx:fresh_batch(batch)) end
local function run_batch(ctx, batch, S)
  local list = ctx:fresh_batch(batch)
  local order = ctx:ready_order(list)
  if not order then return true, "proposal order" end
  return ctx:evaluate_ready_first(list, order, S, protected)
end

-- a strategy that logs what it is told, in order
local function logging()
  local S = { seen = {} }
  function S.on_result(_, cand) S.seen[#S.seen + 1] = cand.source end
  return S
end

describe("one worker: compiled candidates first, settled in proposal order", function()
  it("runs the compiled ones first and settles, crowns and tells the strategy in proposal order", function()
    local times = { a = 2.0, b = 1.0, c = 1.5, d = 0.5 }
    local ev = fake_ev(times, { a = false, c = false })
    local ctx = ctx_with(ev)
    local S = logging()
    local batch = cands("a", "b", "c", "d")
    assert.is_table(ready_order(ctx, batch))
    local ok, msg = run_batch(ctx, batch, S)
    assert.is_true(ok, tostring(msg))
    -- b and d were compiled: they ran first; then a and c. Each result settles once
    -- the ones before it in proposal order are in: a and b after a ran, c and d after c.
    -- The A/Bs are those a run in proposal order makes: a is the first best, b beats
    -- it, c does not beat b, d beats b
    assert.are.same({ "full b", "full d", "full a", "ab a b", "full c", "ab b d" }, ev.calls)
    local order = {}
    for i, c in ipairs(ctx.history) do order[i] = c.source end
    assert.are.same({ "a", "b", "c", "d" }, order)
    assert.are.same({ "a", "b", "c", "d" }, S.seen)
    assert.are.equal("d", ctx.best.source)
  end)

  it("times a candidate through the wait the compilers foresee for the rest, within the budget", function()
    local times = { a = 2.0, b = 1.0, c = 1.5 }
    local ev = fake_ev(times, { b = false, c = false })
    local fills, asked = {}, {}
    function ev:evaluate(src, opts)
      self.calls[#self.calls + 1] = "full " .. src
      fills[src] = opts.timing.fill or "none"
      local r = OK(times[src])
      r.stage = "full"
      return r
    end
    -- the compilers foresee 0.04 s for what is left while b and c compile, nothing ready
    function ev:wait_left(list)
      local names = {}
      for j, c in ipairs(list) do names[j] = c.source end
      asked[#asked + 1] = table.concat(names, ",")
      for _, c in ipairs(list) do if ev:compiled(c) then return 0 end end
      return 0.04
    end
    local ctx = ctx_with(ev, { timing_budget = 0.5 })
    assert.is_true((run_batch(ctx, cands("a", "b", "c"), logging())))
    -- a runs first (compiled) while b and c compile: timed through their 0.04 s; b and c
    -- run with nothing left but each other (c still compiling for b: filled; nothing after c)
    assert.are.equal(0.04, fills.a)
    assert.are.equal(0.04, fills.b)
    assert.are.equal("none", fills.c)
    assert.are.same({ "b,c", "c" }, asked)
    -- capped by the timing budget, and off with --extend-timing=false
    function ev:wait_left() return 9 end
    fills = {}
    assert.is_true((run_batch(ctx_with(ev, { timing_budget = 0.2 }), cands("a", "b", "c"), logging())))
    assert.are.equal(0.2, fills.a)
    fills = {}
    assert.is_true((run_batch(ctx_with(ev, { extend_timing = false }), cands("a", "b", "c"), logging())))
    assert.are.equal("none", fills.a)
    -- the batch's last candidate, where think named the next batch exactly and it compiles
    function ev:compile_counts(c) if c.source == "x" then return 0, 1, 0, 0 end return 1, 0, 0, 0 end
    function ev:wait_left(list)
      for _, c in ipairs(list) do if c.source == "x" then return 0.03 end end
      return 0
    end
    local ctx2 = ctx_with(ev, { timing_budget = 0.5 })
    ctx2.next_exact = cands("x")
    fills = {}
    assert.is_true((run_batch(ctx2, cands("a", "b", "c"), logging())))
    assert.are.equal(0.03, fills.c)
  end)

  it("keeps the proposal order where nothing could move", function()
    local ev = fake_ev({ a = 1, b = 1, c = 1 }, {})
    local ctx = ctx_with(ev)
    assert.is_nil(ready_order(ctx, cands("a", "b", "c")), "all compiled")
    ev = fake_ev({ a = 1, b = 1, c = 1 }, { c = false })
    assert.is_nil(ready_order(ctx_with(ev), cands("a", "b", "c")), "only the last one compiling")
    ev = fake_ev({ a = 1 }, { a = false })
    assert.is_nil(ready_order(ctx_with(ev), cands("a")), "one candidate")
    -- two or more compiling: whichever finishes first may run first
    ev = fake_ev({ a = 1, b = 1, c = 1 }, { b = false, c = false })
    assert.are.same({ 1, 2, 3 }, ready_order(ctx_with(ev), cands("a", "b", "c")))
    ev = fake_ev({ a = 1, b = 1 }, { a = false, b = false })
    assert.are.same({ 1, 2 }, ready_order(ctx_with(ev), cands("a", "b")))
  end)

  -- none compiled at the batch's start: the evaluator's first_ready says, at each step,
  -- which of the rest is ready first (here: the compilers finish c, then a, then b)
  it("runs whichever candidate's binary is ready first, and still settles in proposal order", function()
    local times = { a = 2.0, b = 1.0, c = 1.5 }
    local ev = fake_ev(times, { a = false, b = false, c = false })
    local finish = { "c", "a", "b" }
    ev.asked = {}
    function ev:first_ready(list)
      local names = {}
      for j, c in ipairs(list) do names[j] = c.source end
      self.asked[#self.asked + 1] = table.concat(names, ",")
      for _, f in ipairs(finish) do
        for j, c in ipairs(list) do if c.source == f then table.remove(finish, 1) return j end end
      end
    end
    local ctx = ctx_with(ev)
    local S = logging()
    local ok, msg = run_batch(ctx, cands("a", "b", "c"), S)
    assert.is_true(ok, tostring(msg))
    assert.are.same({ "full c", "full a", "full b" }, { ev.calls[1], ev.calls[2], ev.calls[3] })
    assert.are.same({ "a,b,c", "a,b", "b" }, ev.asked)
    assert.are.same({ "a", "b", "c" }, S.seen)
    assert.are.equal("b", ctx.best.source)
  end)

  it("takes no more than the budget leaves, and nothing evaluated before", function()
    local times = { a = 3, b = 2, c = 1 }
    local ev = fake_ev(times, { a = false })
    local ctx = ctx_with(ev, { budget = 2 })
    ctx.history[1] = { source = "base", proposer = "baseline", result = OK(4) }
    ctx.done_keys[driver.key({ source = "b" })] = true -- b ran in an earlier batch
    local S = logging()
    assert.is_true((run_batch(ctx, cands("a", "b", "c"), S)))
    assert.are.same({ "full c", "full a" }, { ev.calls[1], ev.calls[2] })
    assert.are.same({ "a", "c" }, S.seen)
  end)

  -- the strategy's think hook (Ctx:arm_think): fired by the batch's first worker request
  -- (the fake evaluator fires it as W:request does), before any result of the batch is
  -- settled; what it returns compiles at once; an error stops the run after the batch
  it("runs the strategy's think during the batch's first evaluation and compiles what it returns", function()
    local ev = fake_ev({ a = 3, b = 2 }, { a = false }) -- (b compiled: run first)
    ev.arch = "sm_90"
    local inner = ev.evaluate
    function ev:evaluate(src)
      if self.on_sent then local f = self.on_sent self.on_sent = nil f() end
      return inner(self, src)
    end
    ev.queued = {}
    function ev:queue_compiles(list, urgent) self.queued[#self.queued + 1] = { list = list, urgent = urgent } end
    local ctx = ctx_with(ev)
    local S = logging()
    function S.think(c)
      ev.calls[#ev.calls + 1] = "think after " .. #S.seen .. " results"
      return cands("n1", "n2")
    end
    ctx:arm_think(S)
    local ok, msg = run_batch(ctx, cands("a", "b"), S)
    assert.is_true(ok, msg)
    assert.are.same({ "think after 0 results", "full b", "full a" }, { ev.calls[1], ev.calls[2], ev.calls[3] })
    assert.are.same({ "a", "b" }, S.seen)
    assert.are.equal(1, #ev.queued)
    assert.are.same({ "n1", "n2" }, { ev.queued[1].list[1].source, ev.queued[1].list[2].source })
    assert.is_true(ev.queued[1].urgent)
    -- no more than the budget has room for after the batch
    ctx.opts.budget = #ctx.history - 1 + 2 + 1
    function S.think() return cands("m1", "m2", "m3") end
    ctx:arm_think(S, 2)
    ev.on_sent()
    assert.are.equal(1, #ev.queued[2].list)
    -- an error in think is kept for the driver, which stops after the batch
    function S.think() error("boom") end
    ctx:arm_think(S)
    ev.on_sent()
    assert.matches("think: .*boom", tostring(ctx.think_error))
  end)

  -- think named the next batch exactly: while this batch's last binaries compile, one
  -- of the next batch whose binary is ready runs; the next batch takes its result
  local function borrowing(finish)
    local times = { a = 2.0, b = 1.0, n1 = 1.5, n2 = 0.5 }
    local ev = fake_ev(times, { a = false, b = false, n2 = false })
    ev.arch = "sm_90"
    function ev:queue_compiles() end
    function ev:compile_counts(c) if self:compiled(c) then return 1, 0, 0 end return 0, 1, 0 end
    ev.first_ready = require("batch_fixture").first_ready_in(finish)
    local ctx = ctx_with(ev)
    ctx.pre = {}
    local S = logging()
    function S.think() local l = cands("n1", "n2") l.exact = true return l end
    ctx:arm_think(S, 2)
    ev.on_sent() -- (as the batch's first request or wait fires it)
    return ev, ctx, S
  end
  local function order_of(list) local o = {} for i = 1, #list do o[i] = i end return o end

  it("runs a candidate of the exactly named next batch while this one's compile, and settles it with its batch", function()
    local ev, ctx, S = borrowing({ "n1", "a", "b", "n2" })
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    assert.are.same({ "full n1", "full a", "full b" }, { ev.calls[1], ev.calls[2], ev.calls[3] })
    assert.are.same({ "a", "b" }, S.seen, "n1 is not settled with the batch before its own")
    local b2 = ctx:fresh_batch(cands("n1", "n2"))
    assert.are.equal(2, #b2)
    ctx:arm_think({}, 2)
    assert.is_true((ctx:evaluate_ready_first(b2, order_of(b2), S, protected)))
    local runs = 0
    for _, c in ipairs(ev.calls) do if c == "full n1" then runs = runs + 1 end end
    assert.are.equal(1, runs, "n1 ran twice")
    assert.are.same({ "a", "b", "n1", "n2" }, S.seen)
    local hist = {}
    for i, c in ipairs(ctx.history) do hist[i] = c.source end
    assert.are.same({ "a", "b", "n1", "n2" }, hist)
    assert.are.equal("n2", ctx.best.source)
  end)

  it("settles a result run ahead that the next batch did not propose, after that batch", function()
    local ev, ctx, S = borrowing({ "n1", "a", "b", "n2" })
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    assert.are.equal("full n1", ev.calls[1])
    ctx:arm_think({}, 1)
    local b2 = ctx:fresh_batch(cands("n2"))
    assert.is_true((ctx:evaluate_ready_first(b2, order_of(b2), S, protected)))
    assert.are.same({ "a", "b", "n2", "n1" }, S.seen)
    -- and a think list without exact runs nothing ahead
    ev, ctx, S = borrowing({ "n1", "a", "b" })
    function S.think() return cands("n1", "n2") end
    ctx:arm_think(S, 2)
    ev.on_sent()
    b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    assert.are.same({ "full a", "full b" }, { ev.calls[1], ev.calls[2] })
  end)

  -- the store: a candidate run ahead is stored when it runs, and its batch's own table
  -- (another table, the same candidate) takes its row: one row, one evaluation each
  it("stores a candidate run ahead once, with one evaluation", function()
    local ev, ctx, S = borrowing({ "n1", "a", "b", "n2" })
    local rows, evals = {}, {}
    ctx.store = {}
    function ctx.store.propose(_, _, c)
      if c.store_id then return c.store_id end
      rows[#rows + 1] = c.source
      c.store_id = #rows
      return c.store_id
    end
    function ctx.store.record(st, x, c)
      st:propose(x, c)
      evals[#evals + 1] = c.store_id
    end
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    ctx:arm_think({}, 2)
    local b2 = ctx:fresh_batch(cands("n1", "n2"))
    assert.is_true((ctx:evaluate_ready_first(b2, order_of(b2), S, protected)))
    assert.are.equal("full n1", ev.calls[1])
    assert.are.same({ "n1", "a", "b", "n2" }, rows)
    table.sort(evals)
    assert.are.same({ 1, 2, 3, 4 }, evals)
  end)

  -- a strategy whose propose breaks think's exact promise: what ran ahead is settled
  -- before the next batch (so it counts against the budget first), once, and nothing
  -- runs ahead from then on
  it("settles what ran ahead first when propose breaks the promise, and runs nothing ahead after", function()
    local ev, ctx, S = borrowing({ "n1", "a", "b", "x", "n2" })
    ctx.opts.budget = 4
    table.insert(ctx.history, 1, { source = "base", proposer = "baseline", result = OK(4) })
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    assert.are.equal("full n1", ev.calls[1])
    local next_cands = cands("x", "n2")
    assert.is_true((ctx:claim_pre(next_cands, S, protected)))
    assert.are.same({ "a", "b", "n1" }, S.seen)
    assert.is_nil(next(ctx.pre))
    assert.is_true(ctx.exact_broken)
    -- the budget (4) leaves room for one of the next batch
    local b2 = ctx:fresh_batch(next_cands)
    assert.are.equal(1, #b2)
    -- a later exact think is not trusted
    function S.think() local l = cands("y") l.exact = true return l end
    ctx:arm_think(S, 1)
    ev.on_sent()
    assert.is_nil(ctx.next_exact)
  end)

  -- a result run ahead that the budget's cut of the next batch leaves out is not
  -- claimed: it settles first, and the batch is cut after it (no overrun)
  it("never claims a result run ahead beyond the budget's room", function()
    local _, ctx, S = borrowing({ "n1", "a", "b", "A" })
    ctx.opts.budget = 3
    table.insert(ctx.history, 1, { source = "base", proposer = "baseline", result = OK(4) })
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    local next_cands = cands("A", "n1") -- (n1 named second: the room of 1 takes A)
    assert.is_true((ctx:claim_pre(next_cands, S, protected)))
    assert.are.same({ "a", "b", "n1" }, S.seen)
    assert.are.same({}, ctx:fresh_batch(next_cands))
    assert.is_true(#ctx.history - 1 <= ctx.opts.budget)
  end)

  -- a batch whose results all ran ahead sends no request: think still runs before any
  -- of them reaches the strategy
  it("runs think before settling a batch whose results all ran ahead", function()
    local ev, ctx, S = borrowing({ "n1", "n2", "a", "b" })
    local b1 = ctx:fresh_batch(cands("a", "b"))
    assert.is_true((ctx:evaluate_ready_first(b1, order_of(b1), S, protected)))
    assert.are.same({ "full n1", "full n2", "full a", "full b" }, { ev.calls[1], ev.calls[2], ev.calls[3], ev.calls[4] })
    local seen_at_think
    function S.think() seen_at_think = #S.seen return nil end
    ctx:arm_think(S, 2)
    local b2 = ctx:fresh_batch(cands("n1", "n2"))
    assert.is_true((ctx:evaluate_ready_first(b2, order_of(b2), S, protected)))
    assert.are.equal(2, seen_at_think, "think saw a result of its own batch")
    assert.are.same({ "a", "b", "n1", "n2" }, S.seen)
  end)

  -- a context of budget 10 past its baseline whose evaluator keeps what is queued
  -- (ev.queued: {list, urgent} per call) instead of compiling it
  local function queueing_ctx()
    local ev = fake_ev({}, {})
    ev.arch = "sm_90"
    ev.queued = {}
    function ev:queue_compiles(list, urgent) self.queued[#self.queued + 1] = { list = list, urgent = urgent } end
    local ctx = ctx_with(ev, { budget = 10 })
    ctx.history[1] = { source = "base", proposer = "baseline", result = OK(4) }
    return ev, ctx
  end

  -- the guess past think's choice compiles from think on, not from the next propose
  it("queues the strategy's upcoming as guesses when think chose a batch", function()
    local ev, ctx = queueing_ctx()
    local S, asked = {}, {}
    function S.think() return cands("n1", "n2") end
    function S.upcoming(_, n) asked[#asked + 1] = n return cands("g1", "g2") end
    ctx:arm_think(S, 4)
    ev.on_sent()
    assert.are.equal(2, #ev.queued)
    assert.is_true(ev.queued[1].urgent)
    assert.is_falsy(ev.queued[2].urgent)
    assert.are.same({ "g1", "g2" }, { ev.queued[2].list[1].source, ev.queued[2].list[2].source })
    -- room after this batch (4) and the chosen one (2): 10 - 4 - 2, at most the compilers,
    -- asked past the chosen batch (upcoming names it first)
    local room = math.min(4, require("kloop.eval.compile").default_parallel)
    assert.are.same({ room + 2 }, asked)
    -- think with nothing to choose queues nothing more
    function S.think() return nil end
    ctx:arm_think(S, 4)
    ev.on_sent()
    assert.are.equal(2, #ev.queued)
    assert.are.same({ room + 2 }, asked)
  end)

  -- upcoming names think's batch first (what propose gives next): the guesses queued are
  -- the room's worth past it, not the room less that batch (fails before: n1 and n2, the
  -- chosen batch again, in the room)
  it("queues a room's worth of guesses past the batch think chose", function()
    local ev, ctx = queueing_ctx()
    local S = {}
    function S.think() return cands("n1", "n2") end
    function S.upcoming(_, n)
      local all = cands("n1", "n2", "g1", "g2", "g3", "g4", "g5", "g6")
      for i = #all, n + 1, -1 do all[i] = nil end
      return all
    end
    ctx:arm_think(S, 4)
    ev.on_sent()
    assert.are.equal(2, #ev.queued)
    local got = {}
    for _, c in ipairs(ev.queued[2].list) do got[#got + 1] = c.source end
    -- (the room, 4, at most the compilers at once: a machine of 2 cores guesses 2)
    local want = {}
    for i = 1, math.min(4, require("kloop.eval.compile").default_parallel) do want[i] = "g" .. i end
    assert.are.same(want, got)
    -- an upcoming that gives no list is no guess, not an error (fails before the guard:
    -- "bad argument #1 to 'ipairs'")
    function S.upcoming() return true end
    assert.are.same({}, ctx:upcoming_list(S, 4, cands("n1")))
    assert.are.same({}, ctx:upcoming_list(S, 4))
  end)
end)
