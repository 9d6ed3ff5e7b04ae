-- tests/spec/promote_spec.lua: `kloop promote` on the host backend (kloop.eval.promote):
-- a candidate right on every declared size and wrong on others passes verification and
-- is refused at the hidden sizes with the size named; one that reads past its input is
-- refused by AddressSanitizer; a good one is promoted with its evidence in the store;
-- and a sanitizer that is missing or refuses the device is a skip, never a pass.
local store = require("kloop.store.db")
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local promote = require("kloop.eval.promote")
local sanitize = require("kloop.eval.sanitize")
local util = require("kloop.util")
local native = require("kloop.native")
local fixture = require("tests.spec.support.store_fixture")

local SRC = native.source_dir .. "/tests/promote"

describe("promotion", function()
  local task = assert(taskmod.load(SRC .. "/vadd.c"))
  local db, ids

  setup(function()
    db = assert(store.open(fixture.fresh_path("promote")))
    local run = assert(db:begin_run({ task_name = task.name, task_path = SRC .. "/vadd.c", seed = 1 }))
    local ev = evaluator.new(task, { timing = { budget = 0.1 } })
    ids = {}
    for _, name in ipairs({ "vadd.c", "vadd_fast.c", "vadd_unroll8.c", "vadd_overrun.c" }) do
      local src = assert(util.read_file(SRC .. "/" .. name))
      local id = assert(db:add_candidate(run, { source = src, name = name,
        proposer = name == "vadd.c" and "baseline" or "user" }))
      local r = ev:evaluate(src)
      -- every one of them passes the search's verification
      assert.are.equal("ok", r.verdict, name .. ": " .. tostring(r.reason))
      assert(db:add_evaluation(id, r))
      ids[name] = id
    end
    ev:close()
  end)
  teardown(function() db:close() end)

  local function run(name, opts)
    opts = opts or {}
    opts.quiet, opts.task, opts.timing = true, task, { budget = 1.0 }
    return assert(promote.run(db, ids[name], opts))
  end

  it("refuses the kernel that is right only on the declared sizes, naming the hidden size", function()
    local r = run("vadd_unroll8.c")
    assert.are.equal("refused", r.state)
    local size = r.reason:match("^refused at hidden_sizes: N=(%d+) ")
    assert.truthy(size, r.reason)
    assert.are_not.equal(0, tonumber(size) % 8)
    local rows = db:query("SELECT step, status, reason FROM promotion_steps WHERE promotion_id = ? ORDER BY position",
      r.promotion_id)
    assert.are.equal(6, #rows)
    assert.are.same({ "passed", "failed" }, { rows[1].status, rows[2].status })
    for i = 3, 6 do assert.are.same({ "skipped", "not reached" }, { rows[i].status, rows[i].reason }) end
    local p = db:query("SELECT state, ended_at FROM promotions WHERE id = ?", r.promotion_id)[1]
    assert.are.equal("refused", p.state)
    assert.truthy(p.ended_at)
  end)

  it("promotes the good kernel against the baseline, with its evidence in the store", function()
    local r = run("vadd_fast.c")
    assert.are.equal("promoted", r.state, r.reason)
    assert.is_true(r.ratio_ci[1] > 1)
    local p = db:query("SELECT * FROM promotions WHERE id = ?", r.promotion_id)[1]
    assert.are.same({ "promoted", ids["vadd.c"] }, { p.state, p.incumbent_id })
    assert.is_true(p.ratio_ci_lo > 1 and p.ratio_ci_lo <= p.ratio and p.ratio <= p.ratio_ci_hi)
    assert.are.equal(32, #p.secret_hash)
    local steps = db:query("SELECT step, status, evidence_json FROM promotion_steps WHERE promotion_id = ? ORDER BY position",
      r.promotion_id)
    local got = {}
    for i, s in ipairs(steps) do got[i] = s.step .. "=" .. s.status end
    assert.are.same({ "fresh_worker=passed", "hidden_sizes=passed", "distributions=passed", "property_check=skipped",
      "sanitizer=passed", "ab_timing=passed" }, got)
    local hs = require("cjson").decode(steps[2].evidence_json)
    assert.is_true(#hs.tried >= 8)
    assert.is_true(db:is_promoted(ids["vadd_fast.c"]))
    -- the task's incumbent is now this candidate
    assert.are.equal(ids["vadd_fast.c"], (db:last_promoted(task.name, ids["vadd.c"])))
  end)

  it("refuses the kernel that reads one element past its input at the sanitizer, quoting ASan", function()
    local r = run("vadd_overrun.c")
    assert.are.equal("refused", r.state)
    assert.truthy(r.reason:find("^refused at sanitizer: AddressSanitizer/UBSan at N=%d+: AddressSanitizer: heap%-buffer%-overflow"),
      r.reason)
    local ev = r.steps[5].evidence
    assert.truthy(table.concat(ev.quote, "\n"):find("READ of size 4", 1, true))
  end)

  it("refuses a candidate that is not faster than the incumbent, unless --allow-equal", function()
    local r = run("vadd.c", { against = ids["vadd.c"] })
    assert.are.equal("refused", r.state)
    assert.truthy(r.reason:find("not faster than the incumbent c:" .. ids["vadd.c"], 1, true), r.reason)
  end)
end)

-- the A/B step's decision on a given ratio CI (the evaluator's compare is a double)
describe("promotion's A/B decision", function()
  local function decide(ci, allow_equal)
    local ev = { compare = function() return { a = { verdict = "ok", time_ms = 1 }, b = { verdict = "ok", time_ms = 1, reps = 30 },
      ratio = (ci[1] + ci[2]) / 2, ratio_ci = ci } end }
    local p = { ev = ev, incumbent = { source = "a", label = "c:1", id = 1 }, cand = { source = "b" },
      task = { sizes = { bench = {} } }, allow_equal = allow_equal }
    return promote.Steps.ab_timing(p)
  end

  it("accepts a speedup proven by more than 1%, and nothing less", function()
    assert.are.equal("passed", decide({ 1.02, 1.06 }).status)
    -- a CI just clear of 1: what two identical kernels give now and then
    local r = decide({ 1.004, 1.03 })
    assert.are.equal("failed", r.status)
    assert.matches("not faster than the incumbent c:1", r.reason)
    assert.are.equal("failed", decide({ 0.98, 1.04 }).status)
    -- --allow-equal takes a CI that reaches 1
    assert.are.equal("passed", decide({ 1.004, 1.03 }, true).status)
    assert.are.equal("passed", decide({ 0.98, 1.04 }, true).status)
    assert.are.equal("failed", decide({ 0.90, 0.97 }, true).status)
  end)
end)

describe("sanitizer outcomes", function()
  it("reads compute-sanitizer logs: errors, clean, and the refusals that are skips", function()
    local kind, n = sanitize.read_cuda_log("========= Invalid __global__ read of size 4 bytes\n========= ERROR SUMMARY: 2 errors\n")
    assert.are.same({ "errors", 2 }, { kind, n })
    assert.are.same({ "clean", 0 }, { sanitize.read_cuda_log("========= ERROR SUMMARY: 0 errors\n") })
    kind, n = sanitize.read_cuda_log("========= Error: Device not supported\n========= ERROR SUMMARY: 0 errors\n")
    assert.are.equal("skipped", kind)
    assert.truthy(n:find("Device not supported", 1, true))
    -- racecheck's own summary line (seen on the H200: without it every racecheck run read
    -- as "no summary", so a race was never refused)
    assert.are.same({ "errors", 1 }, { sanitize.read_cuda_log(
      "========= Error: Race reported between Write access at vadd+0x90\n"
      .. "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n") })
    assert.are.same({ "clean", 0 },
      { sanitize.read_cuda_log("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n") })
    -- a tool that died before its summary never passes
    assert.are.equal("skipped", (sanitize.read_cuda_log("========= COMPUTE-SANITIZER\n")))
  end)

  it("skips (never passes) where compute-sanitizer is missing", function()
    local saved = { os.getenv, sanitize.find_compute_sanitizer }
    sanitize.find_compute_sanitizer = function() return nil end
    local r = sanitize.cuda({ sizes = { check = { {} }, bench = {} } }, { source = "" }, { secret = "x" })
    sanitize.find_compute_sanitizer = saved[2]
    assert.are.equal("skipped", r.status)
    assert.truthy(r.reason:find("not found", 1, true))
  end)

  it("reads an ASan report and a UBSan one as errors, a clean run as clean", function()
    assert.are.equal("errors", (sanitize.read_host_output("x\n==1==ERROR: AddressSanitizer: heap-buffer-overflow\n")))
    assert.are.equal("errors", (sanitize.read_host_output("k.c:3:5: runtime error: signed integer overflow\n")))
    assert.are.equal("clean", (sanitize.read_host_output("kloop sanitizer harness: done\n")))
  end)
end)
