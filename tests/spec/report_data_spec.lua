-- tests/spec/report_data_spec.lua: kloop.report.data against SQL queries of a store written through kloop.store.db.
local store = require("kloop.store.db")
local data = require("kloop.report.data")

local root = debug.getinfo(1, "S").source:sub(2):match("^(.*)/tests/spec/") or "."
local make_store = dofile(root .. "/tests/report/fixture.lua")

-- The one value of a one-row, one-column query.
local function scalar(db, sql, ...)
  local rows = assert(db:query(sql, ...))
  local _, v = next(rows[1] or {})
  return v
end

local function group(d, run_id, model, hash)
  for _, r in ipairs(d.runs) do
    for _, g in ipairs(r.groups) do
      if g.run_id == run_id and g.model == model and g.prompt_hash == hash and not g.no_candidate then return g end
    end
  end
end

describe("kloop.report.data", function()
  local path, ids, db, d
  setup(function()
    path, ids = make_store()
    db = assert(store.open(path, { create = false, readonly = true }))
    d = assert(data.gather(db, { ids.run_a, ids.run_b }))
  end)
  teardown(function()
    db:close()
    for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. s) end
  end)

  it("counts proposals, tokens, cost and latency per (model, prompt version) as the store holds them", function()
    local rows = assert(db:query([[SELECT c.run_id, c.model, c.prompt_hash, count(DISTINCT c.id) AS n,
      sum(l.tokens_in) AS tin, sum(l.tokens_out) AS tout, sum(l.cost_usd) AS cost, avg(l.latency_s) AS lat
      FROM candidates c JOIN llm_calls l ON l.candidate_id = c.id WHERE c.proposer = 'llm'
      GROUP BY c.run_id, c.model, c.prompt_hash]]))
    assert.is_true(#rows >= 3)
    for _, row in ipairs(rows) do
      local g = assert(group(d, row.run_id, row.model, row.prompt_hash), row.model .. "@" .. row.prompt_hash)
      assert.are.equal(row.n, g.proposals)
      assert.are.equal(row.tin, g.tokens_in)
      assert.are.equal(row.tout, g.tokens_out)
      assert.is_true(math.abs(row.lat - g.latency_s) < 1e-9)
      if row.cost then assert.is_true(math.abs(row.cost - g.cost_usd) < 1e-12) end
    end
  end)

  it("counts as improvements the ok candidates faster than every ok one evaluated before them", function()
    local rows = assert(db:query([[SELECT c.run_id, c.model, c.prompt_hash, count(*) AS n FROM evaluations e
      JOIN candidates c ON c.id = e.candidate_id
      WHERE c.proposer <> 'baseline' AND e.verdict = 'ok' AND e.median_ms < (SELECT min(e2.median_ms)
        FROM evaluations e2 JOIN candidates c2 ON c2.id = e2.candidate_id
        WHERE c2.run_id = c.run_id AND e2.verdict = 'ok' AND e2.id < e.id)
      GROUP BY c.run_id, c.model, c.prompt_hash]]))
    local total = 0
    for _, row in ipairs(rows) do
      assert.are.equal(row.n, group(d, row.run_id, row.model, row.prompt_hash).improvements)
      total = total + row.n
    end
    local seen = 0
    for _, r in ipairs(d.runs) do for _, g in ipairs(r.groups) do seen = seen + g.improvements end end
    assert.are.equal(total, seen)
    -- the slower ok candidate after the fast one is no improvement, and its group says why per improvement is n/a
    local g = group(d, ids.run_a, "m-b", "v1")
    assert.are.equal(0, g.improvements)
    assert.is_nil(g.cost_per_improvement)
    assert.are.equal("no verified improvement", g.per_improvement_why)
    local fast = group(d, ids.run_a, "m-a", "v1")
    assert.are.equal(fast.cost_usd / fast.improvements, fast.cost_per_improvement)
  end)

  it("keeps the verdict shares of each group equal to the latest evaluations", function()
    local rows = assert(db:query([[SELECT c.run_id, c.model, c.prompt_hash, e.verdict, count(*) AS n
      FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.proposer = 'llm'
      GROUP BY c.run_id, c.model, c.prompt_hash, e.verdict]]))
    for _, row in ipairs(rows) do
      assert.are.equal(row.n, group(d, row.run_id, row.model, row.prompt_hash).verdicts[row.verdict])
    end
  end)

  it("puts the tokens of calls that produced no candidate in their own row, and their errors in the taxonomy", function()
    local loose = scalar(db, "SELECT sum(tokens_in) FROM llm_calls WHERE run_id = ? AND candidate_id IS NULL", ids.run_a)
    local row
    for _, g in ipairs(d.runs[1].groups) do if g.no_candidate then row = g end end
    assert.are.equal(loose, row.tokens_in)
    local all = scalar(db, "SELECT sum(tokens_in) + sum(tokens_out) FROM llm_calls WHERE run_id = ?", ids.run_a)
    assert.are.equal(all, d.runs[1].run.tokens)
    local found
    for _, f in ipairs(d.runs[1].failures) do if f.verdict == "llm_error" then found = f end end
    assert.are.equal("malformed: reply cut at N bytes", found.class)
  end)

  it("classes failures by verdict and reason, with the failing sizes and input sets of their evidence", function()
    local rows = assert(db:query([[SELECT e.verdict, count(*) AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? AND e.verdict <> 'ok' GROUP BY e.verdict]], ids.run_a))
    local by = {}
    for _, f in ipairs(d.runs[1].failures) do by[f.verdict] = (by[f.verdict] or 0) + f.count end
    for _, row in ipairs(rows) do assert.are.equal(row.n, by[row.verdict]) end
    local case = scalar(db, "SELECT json_extract(evidence_json, '$.case') FROM evaluations WHERE candidate_id = ?", ids.wrong)
    assert.are.same({ { name = case, count = 1 } }, d.runs[1].failing_sizes)
    assert.are.same({ { name = "2", count = 1 } }, d.runs[1].failing_sets)
    for _, f in ipairs(d.runs[1].failures) do
      if f.verdict == "compile_error" then assert.are.equal("does not compile: expected '...' before '...'", f.class) end
    end
  end)

  it("follows the best candidate's first parents back to the root, with the size of each change", function()
    local best = scalar(db, [[SELECT c.id FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
      WHERE c.run_id = ? AND e.verdict = 'ok' ORDER BY e.median_ms LIMIT 1]], ids.run_a)
    local chain = d.runs[1].lineage
    assert.are.equal(best, chain[#chain].id)
    assert.are.equal(ids.base_a, chain[1].id)
    for i = 2, #chain do
      assert.are.equal(chain[i - 1].id, scalar(db,
        "SELECT parent_id FROM candidate_parents WHERE candidate_id = ? ORDER BY position LIMIT 1", chain[i].id))
    end
    assert.are.same({ 2, 1 }, { chain[2].added, chain[2].removed })
  end)

  it("reads best, baseline, speedup and the top candidates from the store; a missing ceiling is nil with a why", function()
    local r = d.runs[1].run
    local best = scalar(db, [[SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? AND e.verdict = 'ok']], ids.run_a)
    local base = scalar(db, [[SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? AND e.verdict = 'ok' AND c.proposer = 'baseline']], ids.run_a)
    assert.are.equal(best, r.best_ms)
    assert.are.equal(base, r.lines.baseline_ms)
    assert.are.equal(base / best, r.speedup)
    assert.is_nil(r.lines.ceiling_ms)
    assert.matches("no measured GPU ceiling", r.lines.ceiling_why)
    assert.is_nil(r.lines.library_ms)
    assert.is_string(r.lines.library_why)
    local n_ok = scalar(db, [[SELECT count(*) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? AND e.verdict = 'ok']], ids.run_a)
    assert.are.equal(n_ok, #d.runs[1].top)
    assert.are.same({ "f:32" }, d.runs[1].top[1].registers)
    assert.are.equal(6, r.wall_s)
  end)

  it("draws best-so-far points in evaluation order, with the tokens spent by then", function()
    local pts = d.runs[1].points
    assert.are.equal(scalar(db, [[SELECT count(*) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ?]], ids.run_a), #pts)
    local prev = math.huge
    for _, p in ipairs(pts) do
      assert.is_true(p.best_ms <= prev)
      prev = p.best_ms
    end
    assert.are.equal(pts[#pts].tokens, scalar(db, [[SELECT sum(tokens_in) + sum(tokens_out) FROM llm_calls
      WHERE run_id = ? AND created_at <= (SELECT max(e.created_at) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ?)]], ids.run_a, ids.run_a))
  end)

  it("flags a template id whose versions differ between runs (drift)", function()
    assert.are.equal(1, #d.drift)
    assert.are.equal("optimize", d.drift[1].prompt_id)
    assert.is_true(d.drift[1].version_drift)
    assert.is_true(d.drift[1].model_drift)
  end)

  it("says which run is unknown, and takes the latest run when none is named", function()
    local none, err = data.gather(db, { 999 })
    assert.is_nil(none)
    assert.are.equal("no run 999 in the store", err)
    local latest = assert(data.gather(db, {}))
    assert.are.equal(ids.run_b, latest.runs[1].run.id)
  end)

  it("classes reasons without their particulars and sizes changes as multisets of lines", function()
    assert.are.equal("C: relative error N",
      data.reason_class("C (check1, input set 1): relative error 0.31 (limit 1e-05), 12 elements off"))
    assert.are.equal("(no reason given)", data.reason_class(nil))
    assert.are.same({ 1, 1 }, { data.change_size("a\nb\n", "a\nc\n") })
    assert.are.equal(86400 + 1.5, data.seconds("2026-01-02T00:00:01.500Z") - data.seconds("2026-01-01T00:00:00.000Z"))
  end)
end)
