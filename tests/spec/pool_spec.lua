-- tests/spec/pool_spec.lua: several workers for one search (kloop.search.pool, issue 21):
-- results come back in the batch's order whichever worker finished first; a worker that
-- dies costs its candidate one retry elsewhere; a worker that keeps failing is left out;
-- and end to end on the host backend, --workers 2 gives the candidates and verdicts of
-- one worker, in the same store order.
package.path = "tests/spec/support/?.lua;" .. package.path
local pool = require("kloop.search.pool")
local fixture = require("store_fixture")
local store = require("kloop.store.db")
local driver = require("kloop.search.driver")

-- A fake evaluator: no worker process (the pool then wakes its evaluation every round).
local function fake(name)
  local ev = { name = name, opts = {}, killed = 0 }
  function ev.kill(self) self.killed = self.killed + 1 end
  function ev.close() end
  return ev
end

-- An evaluation that yields `rounds` times (a worker computing) before its result.
local function after(rounds, r)
  for _ = 1, rounds do coroutine.yield("wait") end
  return r
end

describe("kloop.search.pool", function()
  it("returns results by the batch's index, whichever worker finished first", function()
    local a, b = fake("a"), fake("b")
    local p = pool.new({ a, b })
    local order, started = {}, {}
    local res = p:run({ 1, 2, 3, 4, 5 }, function(c, ev)
      -- the first candidates take longest: they finish last
      local r = after(12 - 2 * c, { verdict = "ok", c = c, on = ev.name })
      order[#order + 1] = c
      return r
    end, { start = function(c) started[#started + 1] = c end })
    assert.same({ 1, 2, 3, 4, 5 }, started)
    assert.are_not.same({ 1, 2, 3, 4, 5 }, order, "the fake workers did not finish out of order")
    for i = 1, 5 do
      assert.are.equal(i, res[i].c)
      assert.is_table(res[i].worker)
    end
    -- both workers were used
    local on = {}
    for i = 1, 5 do on[res[i].on] = true end
    assert.is_true(on.a and on.b)
  end)

  it("retries an evaluation whose worker died on another worker, and says so", function()
    local a, b = fake("a"), fake("b")
    local p = pool.new({ a, b })
    local res = p:run({ "x" }, function(_, ev)
      if ev == a then return after(1, { verdict = "crashed", infrastructure = true, reason = "worker gone" }) end
      return after(1, { verdict = "ok" })
    end)
    assert.are.equal("ok", res[1].verdict)
    assert.are.equal(2, res[1].worker.index)
    assert.are.equal(1, res[1].retry.worker)
    assert.are.equal("worker gone", res[1].retry.reason)
    assert.are.equal(1, p.retried)
  end)

  it("keeps a candidate's own failure as its verdict: a crash that is the kernel's is not retried", function()
    local p = pool.new({ fake("a"), fake("b") })
    local calls = 0
    local res = p:run({ "x" }, function() calls = calls + 1 return { verdict = "crashed", reason = "illegal address" } end)
    assert.are.equal(1, calls)
    assert.are.equal("crashed", res[1].verdict)
    assert.is_nil(res[1].retry)
  end)

  it("leaves out a worker that fails for kloop's reasons twice in a row, and ends when none is left", function()
    local a, b = fake("a"), fake("b")
    local p = pool.new({ a, b })
    local bad = function(_, ev)
      if ev == a then return { verdict = "launch_error", infrastructure = true, reason = "cannot start a worker" } end
      return { verdict = "ok" }
    end
    local res = p:run({ 1, 2, 3, 4 }, bad)
    for i = 1, 4 do assert.are.equal("ok", res[i].verdict) end
    assert.is_true(a.pool_dead)
    assert.are.equal(1, #p.left_out)
    assert.are.equal(1, p.left_out[1].index)
    -- every worker gone: the candidates say so instead of hanging
    local q = pool.new({ fake("c"), fake("d") })
    local none = q:run({ 1, 2, 3 }, function() return { verdict = "launch_error", infrastructure = true, reason = "host gone" } end)
    assert.are.equal(3, #none)
    assert.matches("no worker left", none[3].reason)
  end)

  it("stops starting candidates when told to, and raises an evaluation's error after stopping the others", function()
    local p = pool.new({ fake("a"), fake("b") })
    local n = 0
    local res = p:run({ 1, 2, 3, 4 }, function(c) return after(1, { verdict = "ok", c = c }) end,
      { start = function() n = n + 1 end, stop = function() return n >= 2 end })
    assert.are.equal(2, n)
    assert.is_table(res[1])
    assert.is_table(res[2])
    assert.is_nil(res[3])
    local a, b = fake("a"), fake("b")
    local q = pool.new({ a, b })
    local ok, err = pcall(q.run, q, { 1, 2 }, function(c)
      if c == 1 then after(1) error("boom", 0) end
      return after(50, { verdict = "ok" })
    end)
    assert.is_false(ok)
    assert.are.equal("boom", err)
    assert.are.equal(1, b.killed, "the other worker's evaluation was not stopped")
  end)
end)

describe("the speedup by the chain of crowning A/Bs", function()
  it("multiplies the A/B ratios from the baseline to the best, and has none for a broken chain", function()
    local ctx = setmetatable({ history = {} }, driver.Ctx)
    local base = { id = 1, proposer = "baseline", result = { verdict = "ok", time_ms = 10 } }
    local a = { id = 2, result = { verdict = "ok", time_ms = 5, ab = { ratio = 1.2, faster = true, vs = 1, vs_baseline = true } } }
    local b = { id = 3, result = { verdict = "ok", time_ms = 4, ab = { ratio = 1.1, faster = true, vs = 2 } } }
    ctx.history = { base, a, b }
    ctx.baseline = base
    assert.is_true(math.abs(ctx:ab_chain(b) - 1.32) < 1e-12)
    assert.are.equal(2, ctx:speedup(a)) -- the medians' ratio, for comparison
    a.result.ab.faster = false
    assert.is_nil(ctx:ab_chain(b))
  end)
end)

describe("--workers on the host backend", function()
  local TASK = "examples/cpu/sgemm_blocked.c"

  local function run(extra)
    local db = fixture.fresh_path("pool")
    local args = { TASK, "--method", "random", "--budget", "6", "--seed", "4", "--timing-budget", "0.02",
      "--db", db, "--quiet", "--promote", "off" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local print0 = _G.print
    local out = {}
    _G.print = function(...) out[#out + 1] = table.concat({ ... }, "\t") end
    local ok, rc = pcall(driver.run, dofile("strategies/tune.lua"), "strategies/tune.lua", args)
    _G.print = print0
    assert(ok, rc)
    local s = assert(store.open(db, { readonly = true }))
    local rows = s:query([[SELECT c.id, c.params_json, e.verdict, e.extra_json FROM candidates c
      JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.id]])
    return rc, rows, table.concat(out, "\n")
  end

  it("gives the candidates and verdicts of one worker, in the same store order", function()
    local rc1, one = run()
    local rc2, two, out = run({ "--workers", "2" })
    assert.are.equal(0, rc1)
    assert.are.equal(0, rc2)
    assert.are.equal(7, #one)
    assert.are.equal(#one, #two)
    local workers = {}
    for i = 1, #one do
      assert.are.equal(one[i].params_json, two[i].params_json, "candidate " .. i)
      assert.are.equal(one[i].verdict, two[i].verdict, "candidate " .. i)
      local w = (two[i].extra_json or ""):match('"worker":{[^}]*"index":(%d)')
      if w then workers[w] = true end
    end
    assert.is_true(workers["1"] and workers["2"], "both workers evaluated candidates: " .. out)
    assert.matches("workers: 2", out)
    if out:find("crowned:", 1, true) then assert.matches("by A/B:", out) end
  end)

  it("refuses what it cannot honour, with the fix", function()
    local function usage(extra, pattern)
      local err = {}
      local eprint = require("kloop.util").eprintf
      require("kloop.util").eprintf = function(fmt, ...) err[#err + 1] = string.format(fmt, ...) end
      local rc = driver.run(dofile("strategies/tune.lua"), "strategies/tune.lua", extra)
      require("kloop.util").eprintf = eprint
      assert.are.equal(2, rc)
      assert.matches(pattern, table.concat(err))
    end
    usage({ TASK, "--gpus", "all", "--no-store" }, "%-%-gpus is for GPU tasks")
    usage({ TASK, "--workers", "2", "--cascade", "on", "--no-store" }, "not supported yet")
    usage({ TASK, "--workers", "0", "--no-store" }, "workers")
  end)
end)
