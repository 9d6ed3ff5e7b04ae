-- tests/spec/spill_spec.lua: a batch whose last candidate still compiles when all of the
-- next batch (named exactly by think) has run and nothing else can (kloop.search.driver
-- Ctx:spill_ok): the candidate is carried into the next batch, the strategy proposes on,
-- the carried one runs when its binary is ready and settles after the batch it ran in;
-- only where think's list says spill = true, never past the budget, and carried ones are
-- run before the search ends. The evaluator is a double whose first_ready takes the
-- candidates in a given finishing order ("!wait": a wait that asks give_up).
local driver = require("kloop.search.driver")

package.path = "tests/spec/support/?.lua;" .. package.path
local fx = require("batch_fixture")
local OK, cands, protected = fx.OK, fx.cands, fx.protected

local function setup(finish, compiling, opts)
  local ev = fx.fake_ev(finish, compiling)
  local ctx = setmetatable({ ev = ev, opts = fx.opts(opts), history = { { source = "base", proposer = "baseline",
    result = OK(100) } }, verdicts = {}, stages = {}, done_keys = {}, pre = {}, t0 = require("kloop.core.sys").now() },
    driver.Ctx)
  ctx.best = ctx.history[1]
  local S = { seen = {} }
  function S.on_result(_, cand) S.seen[#S.seen + 1] = cand.source end
  return ev, ctx, S
end

-- think naming the next batch exactly, carrying allowed (spill) or not
local function thinks(S, nexts, spill)
  function S.think()
    local l = cands(unpack(nexts))
    l.exact, l.spill = true, spill
    return l
  end
end

local function run(ctx, S, batch)
  local list = ctx:fresh_batch(batch)
  local order = {}
  for i = 1, #list do order[i] = i end
  ctx:arm_think(S, #list)
  return ctx:evaluate_ready_first(list, order, S, protected)
end

describe("carrying a batch's last compile into the next batch (a spill)", function()
  it("carries it once the next batch has run, and settles it after the batch it ran in", function()
    -- a is ready, b compiles long; n1, n2 (the next batch) are ready; then a wait: b is
    -- carried; the next batch proposes n1, n2 (run already), its think names m1; b is
    -- ready before m1
    local ev, ctx, S = setup({ "a", "n1", "n2", "!wait", "b", "m1" }, { b = true, m1 = true })
    thinks(S, { "n1", "n2" }, true)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "n1", "n2" }, ev.calls)
    assert.are.same({ "a" }, S.seen, "the carried one or the next batch settled with this batch")
    assert.are.equal(1, #ctx.carried)
    assert.are.equal("b", ctx.carried[1].source)
    assert.are.equal(1, ctx.spilled_count)
    -- the budget's room counts the carried one
    assert.are.equal(100 - 1 - 1, ctx:room_after(0))
    thinks(S, { "m1" }, true)
    assert.is_true((run(ctx, S, cands("n1", "n2"))))
    assert.are.same({ "a", "n1", "n2", "b" }, ev.calls, "n1 or n2 ran twice, or b did not run")
    assert.are.same({ "a", "n1", "n2", "b" }, S.seen)
    assert.are.equal(0, #ctx.carried)
    local hist = {}
    for i, c in ipairs(ctx.history) do hist[i] = c.source end
    assert.are.same({ "base", "a", "n1", "n2", "b" }, hist)
  end)

  it("waits as before where think does not offer it, or the next batch has not all run", function()
    -- no spill = true: the wait is not given up
    local ev, ctx, S = setup({ "a", "n1", "n2", "!wait", "b" }, { b = true })
    thinks(S, { "n1", "n2" }, nil)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "n1", "n2", "b" }, ev.calls)
    assert.are.same({}, ctx.carried)
    -- n2 not run yet at the wait (it compiles): no spill, b runs in its batch
    local ev2, ctx2, S2 = setup({ "a", "n1", "!wait", "b", "n2" }, { b = true, n2 = true })
    thinks(S2, { "n1", "n2" }, true)
    assert.is_true((run(ctx2, S2, cands("a", "b"))))
    assert.are.same({ "a", "n1", "b" }, ev2.calls)
    assert.are.same({ "a", "b" }, S2.seen)
    assert.are.same({}, ctx2.carried)
  end)

  it("never carries past the budget: with no room beyond the next batch, the batch waits", function()
    -- budget 4: a, b, n1, n2 fill it, no batch could follow
    local ev, ctx, S = setup({ "a", "n1", "n2", "!wait", "b" }, { b = true }, { budget = 4 })
    thinks(S, { "n1", "n2" }, true)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.same({ "a", "n1", "n2", "b" }, ev.calls)
    assert.are.same({}, ctx.carried)
  end)

  it("runs what is carried before the search ends, within the budget", function()
    -- through the driver's own loop: a strategy of two exact batches, then nothing more
    local ev, ctx, S = setup({ "a", "n1", "n2", "!wait", "b" }, { b = true }, { budget = 10 })
    thinks(S, { "n1", "n2" }, true)
    assert.is_true((run(ctx, S, cands("a", "b"))))
    assert.are.equal(1, #ctx.carried)
    assert.is_true((ctx:drain_carried(S, protected)))
    assert.are.same({ "a", "n1", "n2", "b" }, ev.calls)
    assert.are.same({ "a", "b" }, S.seen, "b not settled at the drain")
    assert.are.same({}, ctx.carried)
    -- n1, n2 ran ahead and no batch claimed them: they stay for a batch or the driver's end
    local kept = 0
    for _ in pairs(ctx.pre) do kept = kept + 1 end
    assert.are.equal(2, kept)
  end)
end)
