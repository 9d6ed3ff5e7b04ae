-- tests/spec/provisional_spec.lua: a result that ran but settles later (a batch run out
-- of proposal order, a candidate of the next batch run ahead, a point filling a wait) is
-- in the store as soon as it ran, marked unsettled (kloop.store.run A:record_provisional),
-- and its settling replaces that row by the settled one, in settle order. So a kill in
-- between leaves the result for --resume, which restores it as evaluated (no A/B ran),
-- not as a crash; and a run that ends has one evaluation per candidate. The evaluator is
-- a double; the store is the real one.
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
    -- is marked crashed
    local state = assert(db:resume_state(run_id))
    local st = setmetatable({ db = db, run_id = run_id }, run.Run)
    st:settle(state, true)
    assert.are.equal(1, st.crashed)
    local crashed = db:query([[SELECT c.source FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE e.verdict = 'crashed']])
    assert.are.equal("a", crashed[1].source)
    st.resumed = state
    local restored = {}
    for _, c in ipairs(st:restored()) do restored[#restored + 1] = c.source .. ":" .. c.result.verdict end
    assert.are.same({ "base:ok", "b:ok", "n1:ok", "s1:ok", "a:crashed" }, restored)
  end)
end)
