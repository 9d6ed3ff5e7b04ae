-- tests/spec/store_resume_order_spec.lua: a resumed run's history comes back in the
-- order its evaluations were settled (their ids), not the order its candidates were
-- stored (a batch runs out of proposal order, and a candidate of the next batch may run
-- ahead), so the best after --resume is the last one crowned, as it was live.
local run = require("kloop.store.run")

describe("a resumed run's history", function()
  it("is in settle order, and the crowned best is the one the live run had", function()
    -- stored as they ran: n1 (of the next batch) first, then a, b; settled a, b, n1
    local function c(id, src, eid, crowned)
      return { id = id, source = src, proposer = "tune", evaluation = { id = eid, verdict = "ok", time_ms = 1,
        crowned = crowned } }
    end
    local a = setmetatable({ resumed = { candidates = { c(1, "n1", 13, true), c(2, "a", 11, true), c(3, "b", 12, true),
      { id = 4, source = "interrupted", proposer = "tune" } } } }, run.Run)
    local got = a:restored()
    local order = {}
    for i, x in ipairs(got) do order[i] = x.source end
    assert.are.same({ "a", "b", "n1" }, order)
    -- the driver's best after a resume: the last crowned in this order
    local driver = require("kloop.search.driver")
    local ctx = setmetatable({ history = got }, driver.Ctx)
    for _, x in ipairs(got) do x.improved = x.result.crowned end
    ctx:recompute_best()
    assert.are.equal("n1", ctx.best.source)
  end)

  -- a sentinel's re-evaluation writes a later row for a candidate settled early: the
  -- candidate keeps its place (its first evaluation), with the latest result
  it("keeps a re-evaluated candidate at its first evaluation's place", function()
    local x = { id = 1, source = "x", proposer = "tune", evaluation = { id = 20, verdict = "ok", time_ms = 2 },
      evaluations = { { id = 11 }, { id = 20 } } }
    local y = { id = 2, source = "y", proposer = "tune", evaluation = { id = 12, verdict = "ok", time_ms = 1 },
      evaluations = { { id = 12 } } }
    local got = setmetatable({ resumed = { candidates = { y, x } } }, run.Run):restored()
    assert.are.same({ "x", "y" }, { got[1].source, got[2].source })
    assert.are.equal(20, got[1].evaluation_store_id)
  end)
end)
