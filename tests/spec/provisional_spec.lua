-- tests/spec/provisional_spec.lua: a result that ran but settles later (a batch run out
-- of proposal order, a candidate of the next batch run ahead, a point filling a wait) is
-- in the store as soon as it ran, marked unsettled (kloop.store.run A:record_provisional),
-- and its settling replaces that row by the settled one, in settle order. So a kill in
-- between leaves the result for --resume, which settles it then (the crowning A/B, the
-- settled row: A:unsettled), not a crash; a batch that settles has one evaluation per
-- candidate; a result of kloop's own failure gets no row (the candidate stays proposed).
-- The evaluator is a double; the store is the real one.
package.path = "tests/spec/support/?.lua;" .. package.path
local fixture = require("store_fixture")
local store = require("kloop.store.db")
local run = require("kloop.store.run")
local driver = require("kloop.search.driver")

local fx = require("batch_fixture")
local cands, protected = fx.cands, fx.protected

-- finish: the order binaries are ready in; compiling: not compiled at the batch's start;
-- kill_after: the source whose evaluation the process dies in (the interruption's early
-- return: nothing after it runs)
local function setup(finish, compiling, kill_after)
  local ev = fx.fake_ev(finish, compiling, function(src)
    if src == kill_after then error(require("kloop.core.sys").INTERRUPTED, 0) end
  end)
  local path = fixture.fresh_path("prov")
  local db = assert(store.open(path))
  local run_id = assert(db:begin_run({ strategy_path = "s.lua", strategy_text = "", task_name = "t" }))
  local st = setmetatable({ db = db, path = path, run_id = run_id }, run.Run)
  local ctx = setmetatable({ ev = ev, store = st, opts = fx.opts(), history = {}, verdicts = {}, stages = {},
    done_keys = {}, pre = {}, t0 = require("kloop.core.sys").now() }, driver.Ctx)
  local base = { source = "base", proposer = "baseline" }
  ctx:evaluate(base)
  ctx.baseline = base
  base.result.time_ms = 100
  local S = {}
  function S.on_result() end
  function S.think() local l = cands("n1", "n2") l.exact = true l.spare = cands("s1") return l end
  ctx:arm_think(S, 2)
  ev.on_sent()
  return ctx, S, db, run_id
end

local function rows(db)
  local out = {}
  for _, r in ipairs(db:query([[SELECT c.source, e.id, json_extract(e.extra_json, '$.unsettled') AS unsettled
      FROM evaluations e JOIN candidates c ON c.id = e.candidate_id ORDER BY e.id]])) do
    out[#out + 1] = r.source .. (r.unsettled == 1 and "?" or "")
  end
  return out
end

local function run_batch(ctx, S, batch)
  local list = ctx:fresh_batch(batch)
  return ctx:evaluate_ready_first(list, assert(ctx:ready_order(list, true)), S, protected)
end

describe("a result that settles later", function()
  it("is one settled evaluation each once the batches settle, in settle order", function()
    -- b ready first, then n1 (of the next batch) and s1 fill, then a
    local ctx, S, db = setup({ "b", "n1", "s1", "a" }, { a = true, n2 = true })
    assert.is_true((run_batch(ctx, S, cands("a", "b"))))
    ctx:arm_think({}, 2)
    assert.is_true((run_batch(ctx, S, cands("n1", "n2"))))
    assert.are.same({ "base", "a", "b", "s1", "n1", "n2" }, rows(db))
  end)

  it("is kept, unsettled, when kloop dies before its settling, and a resume restores it, not a crash", function()
    -- b and n1 and s1 ran; kloop dies in a's evaluation
    local ctx, S, db, run_id = setup({ "b", "n1", "s1", "a" }, { a = true, n2 = true }, "a")
    local ok = run_batch(ctx, S, cands("a", "b"))
    assert.is_false(ok)
    assert.are.same({ "base", "b?", "n1?", "s1?" }, rows(db))
    -- --resume of a run still marked running (killed): only a, whose evaluation was cut,
    -- is marked crashed; b, n1 and s1 are settled again, in the order they ran
    local state = assert(db:resume_state(run_id))
    local st = setmetatable({ db = db, run_id = run_id }, run.Run)
    st:settle(state, true)
    assert.are.equal(1, st.crashed)
    st.resumed = state
    local restored, unsettled = {}, {}
    for _, c in ipairs(st:restored()) do restored[#restored + 1] = c.source .. ":" .. c.result.verdict end
    assert.are.same({ "base:ok", "a:crashed" }, restored)
    for _, c in ipairs(st:unsettled()) do
      unsettled[#unsettled + 1] = c.source
      assert.is_nil(c.result.unsettled)
      assert.is_nil(c.result.id)
      assert.are.equal("ok", c.result.verdict)
      assert.is_number(c.result.time_ms)
    end
    assert.are.same({ "b", "n1", "s1" }, unsettled)
    assert.is_true(st:unsettled()[3].result.filled, "the spare's row lost its filled mark")
  end)

  it("is settled by the resumed run: crowned if its A/B says so, one settled row each", function()
    -- (the killed run: b, n1 and s1 ran, kloop died in a's evaluation)
    local killed, S, db, run_id = setup({ "b", "n1", "s1", "a" }, { a = true, n2 = true }, "a")
    assert.is_false((run_batch(killed, S, cands("a", "b"))))
    -- the resumed run, as kloop.search.driver's M.run does it: the store opened on the run
    local o = fx.opts({ resume = run_id })
    local rctx = setmetatable({ ev = fx.fake_ev({}, {}), opts = o, history = {}, verdicts = {}, stages = {},
      done_keys = {}, pre = {}, t0 = 0, task = { kernel = "t.cu" }, path = "s.lua" }, driver.Ctx)
    local state = assert(db:resume_state(run_id))
    local st = setmetatable({ db = db, run_id = run_id, resumed = state }, run.Run)
    st:settle(state, true)
    rctx.store = st
    for _, c in ipairs(st:restored()) do
      c.id = #rctx.history + 1
      rctx.history[#rctx.history + 1] = c
      c.improved = c.result.crowned == true or nil
      rctx:recompute_best()
      if c.proposer == "baseline" then rctx.baseline = c end
    end
    assert.are.equal("base", rctx.best.source)
    for _, c in ipairs(st:unsettled()) do rctx:evaluate(c, c.result) end
    assert.are.equal("b", rctx.best.source, "the fastest result that ran before the kill is not crowned")
    local got = rows(db)
    assert.are.same({ "base", "a", "b", "n1", "s1" }, got)
    assert.are.equal("b", db:best(run_id).source)
  end)

  it("keeps no row for a result kloop's own failure made: the candidate stays proposed", function()
    local ctx, S, db = setup({ "b", "a" }, { a = true })
    local inner = ctx.ev.evaluate
    function ctx.ev:evaluate(src)
      local r = inner(self, src)
      if src == "b" then return { verdict = "launch_error", infrastructure = true, cache_error = true, reason = "full" } end
      return r
    end
    ctx.ev.on_sent = nil
    local list = ctx:fresh_batch(cands("a", "b"))
    local ok = ctx:evaluate_ready_first(list, { 2, 1 }, S, protected)
    assert.is_false(ok)
    assert.are.same({ "base", "a" }, rows(db), "b's failure is kloop's: no row, so --resume evaluates it again")
  end)
end)
