-- tests/spec/promote_sim_spec.lua: issue 17 on the sim backend (tests/spec/support/
-- sim_evaluator.lua): a search by the real driver ends with a candidate right on every
-- declared size (all multiples of 8) and wrong on others as its best; promotion refuses
-- it at the hidden sizes, naming the size; a right candidate is promoted with its
-- evidence in the store; export refuses the unpromoted; and a candidate that differs
-- from its parent only in a comment never becomes the new best.
local cjson = require("cjson")
local store = require("kloop.store.db")
local promote = require("kloop.eval.promote")
local export = require("kloop.cli.export")
local util = require("kloop.util")
local simev = require("tests.spec.support.sim_evaluator")
local fixture = require("tests.spec.support.store_fixture")

-- The task: z = x + y over N floats; every declared size is a multiple of 8.
local SIDECAR = [[
return kloop.task {
  name = "vadd_sim", entry = "vadd", kernel = "vadd.sim",
  args = { { "N", "int" }, { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" }, { "z", "float*", size = "N", output = true } },
  sizes = { bench = { N = 2048 }, check = { { N = 1000 }, { N = 8 } }, promote = { N = { max = 8192 } } },
  launch = { grid = { 1 }, block = { 1 } },
  reference = { source = "vadd_ref.sim", entry = "vadd_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  flush_cache = false,
  cost = function(s) return { flops = s.N, bytes = 12 * s.N } end,
}
]]

-- A sim module of entry `name` (z of type ztype) with `body` over n, x, y, z.
local function module(name, body, ztype)
  return string.format([[
-- extern "C" __global__ void %s(int N, const float *x, const float *y, %s *z);
local ffi = require("ffi")
return { %s = function(p)
  local n = ffi.cast("int32_t*", p[0])[0]
  local x = ffi.cast("float*", ffi.cast("uint64_t*", p[1])[0])
  local y = ffi.cast("float*", ffi.cast("uint64_t*", p[2])[0])
  local z = ffi.cast("%s*", ffi.cast("uint64_t*", p[3])[0])
%s
end }
]], name, ztype or "float", name, ztype or "float", body)
end

-- The task's kernel: the sum written four times over (slow on purpose).
local BASELINE = module("vadd", "  for _ = 1, 4 do for i = 0, n - 1 do z[i] = x[i] + y[i] end end")
-- Right on every size.
local RIGHT = module("vadd", "  for i = 0, n - 1 do z[i] = x[i] + y[i] end")
-- Unrolled by 8 with no remainder loop: right on every declared size, wrong on any other;
-- and the fastest (fewer VM instructions per element: the sim machine's clock).
local lines = {}
for k = 0, 7 do lines[#lines + 1] = string.format("    zi[%d] = xi[%d] + yi[%d]", k, k, k) end
local UNROLL8 = module("vadd", "  for i = 0, n - 8, 8 do\n    local xi, yi, zi = x + i, y + i, z + i\n"
  .. table.concat(lines, "\n") .. "\n  end")
local REF = module("vadd_ref", "  for i = 0, n - 1 do z[i] = x[i] + y[i] end", "double")

local dir = fixture.dir .. "/vadd_sim"
assert(util.mkdir_p(dir))
for name, text in pairs({ ["vadd_sim.lua"] = SIDECAR, ["vadd.sim"] = BASELINE, ["vadd_ref.sim"] = REF }) do
  assert(util.write_file(dir .. "/" .. name, text))
end
local TASK_PATH = dir .. "/vadd_sim.lua"
-- the strategy below lives in this file: the run records it as its strategy
local SPEC_PATH = require("kloop.native").source_dir .. "/tests/spec/promote_sim_spec.lua"

-- Runs fn with print and util.eprintf captured: fn's results, then the text printed.
local function captured(fn)
  local out = {}
  local saved_print, saved_eprintf = _G.print, util.eprintf
  _G.print = function(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    out[#out + 1] = table.concat(t, "\t") .. "\n"
  end
  util.eprintf = function(f, ...) out[#out + 1] = string.format(f, ...) end
  local r = { pcall(fn) }
  _G.print, util.eprintf = saved_print, saved_eprintf
  if not r[1] then error(r[2], 0) end
  return r[2], table.concat(out)
end

describe("the sim evaluator", function()
  local task = assert(simev.load_task(TASK_PATH))

  -- a right kernel that also records the first input it saw (kernels run in-process)
  local SPY = module("vadd", "  _G.sim_seen = _G.sim_seen or {}\n  _G.sim_seen[#_G.sim_seen + 1] = x[0]\n"
    .. "  for i = 0, n - 1 do z[i] = x[i] + y[i] end")

  -- the first input a verification of SPY by ev showed the kernel
  local function seen(ev)
    _G.sim_seen = nil
    local r = ev:submit("evaluate", SPY, {}, { verify_only = true })
    assert.are.equal("ok", r.verdict, r.reason)
    return _G.sim_seen[1]
  end
  local function first_input(secret)
    local ev = simev.new(task, { secret = secret })
    local x = seen(ev)
    ev:close()
    return x
  end

  it("draws its inputs from the secret: a new secret, new inputs", function()
    local a, b, a2 = first_input("secret-a"), first_input("secret-b"), first_input("secret-a")
    assert.are.equal(a, a2)
    assert.are_not.equal(a, b)
  end)

  it("gives each evaluator its own worker, as processes are", function()
    local e1, e2 = simev.new(task, { secret = "one" }), simev.new(task, { secret = "two" })
    local first = seen(e1)
    assert.are_not.equal(first, seen(e2))
    -- e2's setup left e1's task alone (a promotion keeps one evaluator while others run)
    assert.are.equal(first, seen(e1))
    local r = e1:evaluate(RIGHT, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.same({ 1, 1 }, { e1.workers, e2.workers })
    -- the workers' cjson options (NaN allowed) stayed theirs: the parent's JSON refuses NaN still
    assert.is_false((pcall(cjson.encode, { 0 / 0 })))
    e1:close()
    e2:close()
  end)

  it("times by the code: the same code the same, always; less work, less time", function()
    local ev = simev.new(task)
    local c = ev:compare(RIGHT, RIGHT .. "\n-- a comment", { timing = { budget = 0 } })
    assert.are.equal("ok", c.a.verdict, c.a.reason)
    assert.are.same({ 1, { 1, 1 } }, { c.ratio, c.ratio_ci })
    local f = ev:compare(BASELINE, RIGHT, { timing = { budget = 0 } })
    assert.is_true(f.ratio > 3.5 and f.ratio_ci[1] == f.ratio, tostring(f.ratio))
    ev:close()
  end)

  it("returns verdicts, never raises: a module that does not load, a wrong one, a NaN", function()
    local ev = simev.new(task)
    assert.are.equal("compile_error", ev:evaluate("return {", {}).verdict)
    local r = ev:evaluate((UNROLL8:gsub("n %- 8, 8", "n - 16, 8")), {})
    assert.are.equal("unwritten", r.verdict)
    -- (a NaN where the reference is finite)
    local nan = module("vadd", "  for i = 0, n - 1 do z[i] = x[i] + y[i] end\n  z[n - 1] = 0 / 0")
    assert.are.equal("nan", ev:evaluate(nan, {}).verdict)
    local s = ev:screen(RIGHT)
    assert.are.same({ "ok", "screened", 3 }, { s.verdict, s.stage, s.reps })
    ev:close()
  end)

  it("starts no worker under compute-sanitizer: the sanitizer step skips, never passes", function()
    local sanitize = require("kloop.eval.sanitize")
    local saved = sanitize.find_compute_sanitizer
    sanitize.find_compute_sanitizer = function() return "/bin/true" end -- found, as on a GPU machine
    local ok, r = pcall(simev.with_evaluator, sanitize.run, task, { source = RIGHT }, { secret = "s" })
    sanitize.find_compute_sanitizer = saved
    assert(ok, r)
    assert.are.equal("skipped", r.status, r.reason)
    assert.are.equal(#sanitize.CUDA_TOOLS, #r.evidence.tools)
    for _, t in ipairs(r.evidence.tools) do assert.are.same({ "skipped", "launch_error" }, { t.status, t.verdict }) end
  end)
end)

describe("promotion on the sim backend", function()
  local db_path = fixture.fresh_path("promote_sim")
  local task = assert(simev.load_task(TASK_PATH))
  local driver = simev.require_with("kloop.search.driver")
  local ctx, code, db, said
  local by_name = {}

  -- The strategy: the baseline's improvement, then the bad candidate (faster still), then
  -- (the best timed at a slow moment, so a median beats it) its comment-only variant, and
  -- the bad candidate once more, the same text.
  local step = 0
  local strategy = {
    propose = function(c)
      step = step + 1
      if step == 1 then return { { source = RIGHT, name = "right", proposer = "user", parent = c.baseline } } end
      if step == 2 then return { { source = UNROLL8, name = "unroll8", proposer = "user", parent = c.best } } end
      if step == 3 then
        c.best.result.time_ms = c.best.result.time_ms * 3
        return { { source = UNROLL8 .. "\n-- the same kernel, with a comment\n", name = "comment", proposer = "user",
            parent = c.best },
          { source = UNROLL8, name = "repeat", proposer = "user", parent = c.best } }
      end
      return nil
    end,
  }

  setup(function()
    code, said = captured(function()
      return driver.run(strategy, SPEC_PATH, { TASK_PATH, "--budget", "8", "--db", db_path, "--quiet",
        "--promote", "off", "--profile", "none", "--seed", "1", "--timing-budget", "0.2" })
    end)
    ctx = driver.last_ctx
    assert(ctx, "the driver stopped before its run: " .. said)
    for _, c in ipairs(ctx.history) do by_name[c.name or c.proposer] = c end
    db = assert(store.open(db_path))
  end)
  teardown(function() if db then db:close() end end)

  local function run_promotion(name)
    return assert(simev.with_evaluator(promote.run, db, by_name[name].store_id,
      { task = task, quiet = true, timing = { budget = 0.2 } }))
  end

  it("the search ends with the candidate right only on the declared sizes as its best", function()
    assert.are.equal(0, code, said)
    assert.are.equal("sim", ctx.ev:backend())
    for _, name in ipairs({ "baseline", "right", "unroll8" }) do
      assert.are.equal("ok", by_name[name].result.verdict, name .. ": " .. tostring(by_name[name].result.reason))
    end
    assert.are.equal(by_name.unroll8, ctx.best)
    assert.is_true(by_name.right.result.ab.faster)
    assert.is_true(by_name.unroll8.result.ab.faster)
  end)

  it("never crowns a candidate that differs from its parent only in a comment", function()
    local c = by_name.comment
    assert.is_table(c, "the comment-only variant was not evaluated: " .. said)
    assert.are.equal("ok", c.result.verdict, c.result.reason)
    assert.is_table(c.result.ab, "a median below the best's goes to an A/B")
    assert.are.same({ false, 1 }, { c.result.ab.faster, c.result.ab.ratio })
    assert.is_false(c.result.crowned)
    assert.are.equal(by_name.unroll8, ctx.best)
    -- the same text again is not evaluated at all
    assert.is_nil(by_name["repeat"])
    assert.are.equal(4, #ctx.history)
  end)

  it("refuses the best at the hidden sizes, naming the size", function()
    local r = run_promotion("unroll8")
    assert.are.equal("refused", r.state, r.reason)
    local size = r.reason:match("^refused at hidden_sizes: N=(%d+) unwritten")
    assert.truthy(size, r.reason)
    assert.are_not.equal(0, tonumber(size) % 8)
    local rows = db:query("SELECT step, status, reason FROM promotion_steps WHERE promotion_id = ? ORDER BY position",
      r.promotion_id)
    assert.are.same({ "fresh_worker", "passed" }, { rows[1].step, rows[1].status })
    assert.are.same({ "hidden_sizes", "failed" }, { rows[2].step, rows[2].status })
    for i = 3, 6 do assert.are.same({ "skipped", "not reached" }, { rows[i].status, rows[i].reason }) end
    assert.are.equal("refused", db:query("SELECT state FROM promotions WHERE id = ?", r.promotion_id)[1].state)
    assert.is_false(db:is_promoted(by_name.unroll8.store_id))
  end)

  it("promotes the right candidate against the run's baseline, with its evidence in the store", function()
    local r = run_promotion("right")
    assert.are.equal("promoted", r.state, r.reason)
    local p = db:query("SELECT * FROM promotions WHERE id = ?", r.promotion_id)[1]
    assert.are.same({ "promoted", by_name.baseline.store_id }, { p.state, p.incumbent_id })
    assert.is_true(p.ratio_ci_lo > 1, tostring(p.ratio_ci_lo))
    -- (no compute-sanitizer worker in the sim evaluator: skipped, never passed)
    assert.are.equal("fresh_worker=passed hidden_sizes=passed distributions=passed property_check=skipped"
      .. " sanitizer=skipped ab_timing=passed", db:query("SELECT group_concat(step || '=' || status, ' ') AS s"
      .. " FROM (SELECT step, status FROM promotion_steps WHERE promotion_id = ? ORDER BY position)", r.promotion_id)[1].s)
    local evidence = {}
    for _, row in ipairs(db:query("SELECT step, evidence_json FROM promotion_steps WHERE promotion_id = ?", r.promotion_id)) do
      evidence[row.step] = cjson.decode(row.evidence_json)
    end
    local hs = evidence.hidden_sizes
    assert.is_true(#hs.tried >= 8, #hs.tried)
    local odd = false
    for _, t in ipairs(hs.tried) do if t.size.N % 8 ~= 0 then odd = true end end
    assert.is_true(odd, "the hidden sizes include one that is not a multiple of 8")
    assert.are.same({ "large magnitudes", "mixed signs", "near zero" }, evidence.distributions.distributions)
    assert.is_true(db:is_promoted(by_name.right.store_id))
  end)

  it("export refuses the unpromoted candidate without --force, and exports the promoted one", function()
    local out = fixture.dir .. "/export_sim"
    local id = by_name.unroll8.store_id
    local rc, text = captured(function() return export.main({ tostring(id), "-o", out, "--db", db_path }) end)
    assert.are.equal(1, rc)
    assert.truthy(text:find(string.format("c:%d is not promoted (refused at hidden_sizes: N=", id), 1, true), text)
    assert.is_nil(util.read_file(out .. "/provenance.json"))
    rc = captured(function() return export.main({ tostring(id), "-o", out, "--db", db_path, "--force" }) end)
    assert.are.equal(0, rc)
    assert.truthy(util.read_file(out .. "/provenance.json"):find("exported WITHOUT promotion (--force)", 1, true))
    rc = captured(function()
      return export.main({ tostring(by_name.right.store_id), "-o", out .. "2", "--db", db_path })
    end)
    assert.are.equal(0, rc)
    assert.are.equal("promoted", cjson.decode(util.read_file(out .. "2/provenance.json")).promotion.state)
  end)
end)
