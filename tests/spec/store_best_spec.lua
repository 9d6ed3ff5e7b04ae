-- tests/spec/store_best_spec.lua: the store's best of a run (DB:best, `kloop best`, the
-- MCP best tool) is the driver's: the last candidate crowned, by the moment it was
-- crowned, whose newest evaluation is still a verified full one. A sentinel's
-- re-evaluation writes a newer row for a candidate: one that now fails is dethroned
-- (its older crowned row does not count), and one that passes again keeps its place
-- among the crownings (its newer row is no new crowning).
local store = require("kloop.store.db")
package.path = "tests/spec/support/?.lua;" .. package.path
local fixture = require("store_fixture")

local function ok(ms, crowned)
  return { verdict = "ok", time_ms = ms, stage = "full", crowned = crowned }
end

local function setup()
  local db = assert(store.open(fixture.fresh_path("best")))
  local run = assert(db:begin_run({ strategy_path = "s.lua", strategy_text = "", task_name = "t" }))
  local ids = {}
  local function cand(name) ids[name] = assert(db:add_candidate(run, { source = name, name = name })) return ids[name] end
  return db, run, cand, ids
end

describe("the store's best of a run", function()
  it("is not a crowned candidate whose newer evaluation failed", function()
    local db, run, cand, ids = setup()
    assert(db:add_evaluation(cand("base"), ok(10, true)))
    assert(db:add_evaluation(cand("w"), ok(8, true)))
    assert(db:add_evaluation(cand("x"), ok(6, true)))
    assert.are.equal(ids.x, db:best(run).id)
    -- the sentinel evaluated x again: it now fails
    assert(db:add_evaluation(ids.x, { verdict = "wrong_output", reason = "differs on a second look" }))
    assert.are.equal(ids.w, db:best(run).id, "a dethroned candidate is named the best")
    -- every crowned one failing since: no best (the driver has none), not the fastest row
    assert(db:add_evaluation(ids.w, { verdict = "wrong_output", reason = "second look" }))
    assert(db:add_evaluation(ids.base, { verdict = "wrong_output", reason = "second look" }))
    local b, why = db:best(run)
    assert.is_nil(b)
    assert.matches("no verified candidate", why)
    db:close()
  end)

  it("is the last crowned by its crowning, not by a later re-evaluation's row", function()
    local db, run, cand, ids = setup()
    assert(db:add_evaluation(cand("base"), ok(10, true)))
    assert(db:add_evaluation(cand("w"), ok(8, true)))
    assert(db:add_evaluation(cand("x"), ok(7.9, true)))
    -- w evaluated again by the sentinel, still verified (its result keeps crowned)
    assert(db:add_evaluation(ids.w, ok(8.1, true)))
    local b = db:best(run)
    assert.are.equal(ids.x, b.id, "a re-evaluated older best took the crown back")
    assert.are.equal(7.9, b.evaluation.median_ms)
    -- and the best's evaluation is its newest: x re-evaluated too
    assert(db:add_evaluation(ids.x, ok(7.95, true)))
    b = db:best(run)
    assert.are.equal(ids.x, b.id)
    assert.are.equal(7.95, b.evaluation.median_ms)
    db:close()
  end)

  it("by the lowest median in a run stored before crowning, on each candidate's newest evaluation", function()
    local db, run, cand, ids = setup()
    assert(db:add_evaluation(cand("a"), ok(5)))
    assert(db:add_evaluation(cand("b"), ok(6)))
    assert.are.equal(ids.a, db:best(run).id)
    assert(db:add_evaluation(ids.a, { verdict = "wrong_output", reason = "second look" }))
    assert.are.equal(ids.b, db:best(run).id)
    db:close()
  end)
end)
