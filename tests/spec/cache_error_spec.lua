-- tests/spec/cache_error_spec.lua: a compile cache that cannot keep a binary (a full
-- disk, a folder that cannot be made) is kloop's failure: the evaluator says so as an
-- infrastructure result (not compile_error), and the driver stops the run on it, since
-- every candidate would fail the same way. Real NVRTC, no GPU.
local compile = require("kloop.eval.compile")
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local driver = require("kloop.search.driver")
local native = require("kloop.native")

describe("a compile cache that cannot keep binaries", function()
  local saved = compile.cache_dir
  after_each(function() compile.cache_dir = saved end)

  it("is an infrastructure result of the evaluator, with the fix, not a compile error", function()
    local file = os.tmpname() -- a file where the cache's folder would be
    compile.cache_dir = function() return file .. "/cache" end
    local task = assert(taskmod.load(native.source_dir .. "/kernels/saxpy.lua"))
    local ev = eval.new(task, {})
    ev.arch, ev.ready = "sm_90", true
    local req, r = ev:prepare(task.source .. "\n// " .. tostring(os.time()) .. "\n", {})
    os.remove(file)
    assert.is_nil(req)
    assert.are.equal("launch_error", r.verdict)
    assert.is_true(r.infrastructure)
    assert.is_true(r.cache_error)
    assert.truthy(r.reason:find("cannot keep the binary (Not a directory)", 1, true), r.reason)
    assert.truthy(r.reason:find("KLOOP_CACHE", 1, true), r.reason)
  end)

  it("stops the run in the driver, the candidate not recorded as evaluated", function()
    local reason = "kloop's compile cache /x cannot keep the binary (No space left on device): free space there"
    local ev = { evaluate = function() return { verdict = "launch_error", infrastructure = true, cache_error = true,
      reason = reason } end }
    local ctx = setmetatable({ ev = ev, opts = { cascade = "off" }, history = {}, verdicts = {}, stages = {} }, driver.Ctx)
    local ok, err = pcall(ctx.evaluate, ctx, { source = "x", defines = {} })
    assert.is_false(ok)
    assert.are.equal(reason, err)
    assert.are.equal(0, #ctx.history)
  end)

  -- met where no result goes back to the driver: a crowning A/B's compile
  it("stops the run when an A/B met it", function()
    local reason = "kloop's compile cache /x cannot keep the binary (No space left on device): free space there"
    local ev = {}
    function ev:compare()
      self.cache_failed = reason
      return { a = { verdict = "ok", time_ms = 2 }, b = { verdict = "launch_error", reason = reason } }
    end
    local ctx = setmetatable({ ev = ev, opts = { cascade = "off", profile = "none", timing_budget = 0.1, quiet = true },
      history = {}, verdicts = {}, stages = {} }, driver.Ctx)
    function ctx.progress() end
    function ctx.write_report() end
    ctx.best = { id = 1, source = "best", result = { verdict = "ok", time_ms = 2, stage = "full" } }
    local cand = { source = "c", result = nil }
    local ok, err = pcall(ctx.settle, ctx, cand, { verdict = "ok", time_ms = 1, stage = "full" })
    assert.is_false(ok)
    assert.are.equal(reason, err)
  end)

  -- and in the profile of a new best, after the A/B
  it("stops the run when the best's profile met it", function()
    local reason = "kloop's compile cache /x cannot keep the binary (No space left on device)"
    local ctx = setmetatable({ ev = {}, opts = { cascade = "off", profile = "best", timing_budget = 0.1, quiet = true },
      history = {}, verdicts = {}, stages = {} }, driver.Ctx)
    function ctx.progress() end
    function ctx.write_report() end
    function ctx.profile(self) self.ev.cache_failed = reason end
    local ok, err = pcall(ctx.settle, ctx, { source = "c" }, { verdict = "ok", time_ms = 1, stage = "full" })
    assert.is_false(ok, "the run went on")
    assert.are.equal(reason, err)
  end)
end)
