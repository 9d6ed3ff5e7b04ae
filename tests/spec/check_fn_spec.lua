-- tests/spec/check_fn_spec.lua: a task's check function (docs/TASKS.md "Check
-- functions"): run in the host worker on host copies, in place of a reference; a refusal
-- is `wrong` with the check's words, a check that raises or never returns is a clear
-- verdict within the deadline and the worker serves the next candidate.
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local util = require("kloop.util")
local native = require("kloop.native")

local SRC = native.source_dir .. "/tests/promote"

-- sum_check with its check function's body replaced (a sidecar in a temp folder)
local function sum_with(body)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir .. " && cp " .. SRC .. "/sum_check.c " .. dir)
  local side = assert(util.read_file(SRC .. "/sum_check.lua"))
  if body then
    side = side:gsub("  check = function%(c%).-\n  end,\n", function() return "  check = function(c) " .. body .. " end,\n" end)
  end
  local f = assert(io.open(dir .. "/sum_check.lua", "w"))
  f:write(side)
  f:close()
  return dir
end

local function read(name) return assert(util.read_file(SRC .. "/" .. name)) end

describe("check functions", function()
  it("judge a task with no reference: the right candidate passes, a wrong one is wrong in the check's words", function()
    local task = assert(taskmod.load(SRC .. "/sum_check.c"))
    assert.is_function(task.check)
    assert.is_true(task.reference.none)
    local ev = eval.new(task, { backend = "host", nsets = 2 })
    local ok = ev:evaluate(read("sum_check.c"), { timing = { budget = 0.05 } })
    assert.are.equal("ok", ok.verdict, tostring(ok.reason))
    local bad = ev:evaluate(read("sum_check_drop.c"), { timing = { budget = 0.05 } })
    assert.are.equal("wrong", bad.verdict)
    -- (the dropped element is uniform(0,1): below the check's tolerance on one input set
    -- in twenty, so the set, or even the size, that shows it varies with the run secret)
    assert.truthy(bad.reason:match("the task's check refused size check%d %(set %d%): s = "), bad.reason)
    assert.truthy(bad.reason:find("the float64 sum is", 1, true), bad.reason)
    ev:close()
  end)

  it("a check that raises, or never returns, is launch_error within the deadline; the worker goes on", function()
    for _, body in ipairs({ 'error("the residual is not defined")', "while true do end" }) do
      local dir = sum_with(body)
      local task = assert(taskmod.load(dir .. "/sum_check.c"))
      local ev = eval.new(task, { backend = "host", nsets = 1 })
      local t0 = os.time()
      local r = ev:evaluate(read("sum_check.c"), { timing = { budget = 0.05 } })
      assert.are.equal("launch_error", r.verdict, tostring(r.reason))
      assert.truthy(r.reason:find("the task's check failed on size", 1, true), r.reason)
      if body:find("while") then
        assert.truthy(r.reason:find("without returning", 1, true), r.reason)
      else
        assert.truthy(r.reason:find("the residual is not defined", 1, true), r.reason)
      end
      assert.is_true(os.time() - t0 < 30)
      -- the same worker serves the next candidate
      local r2 = ev:evaluate(read("sum_check_drop.c"), { timing = { budget = 0.05 } })
      assert.are.equal("launch_error", r2.verdict)
      ev:close()
      os.execute("rm -rf " .. dir)
    end
  end)

  it("a check's out-of-range read and write are refused, not a crash", function()
    local dir = sum_with('local x = c.input("x"); x[0] = 1; return true')
    local task = assert(taskmod.load(dir .. "/sum_check.c"))
    local ev = eval.new(task, { backend = "host", nsets = 1 })
    local r = ev:evaluate(read("sum_check.c"), { timing = { budget = 0.05 } })
    assert.are.equal("launch_error", r.verdict)
    assert.truthy(r.reason:find("x is read-only", 1, true), r.reason)
    ev:close()
    os.execute("rm -rf " .. dir)
    dir = sum_with('local x = c.input("x"); return x[#x] ~= nil')
    task = assert(taskmod.load(dir .. "/sum_check.c"))
    ev = eval.new(task, { backend = "host", nsets = 1 })
    r = ev:evaluate(read("sum_check.c"), { timing = { budget = 0.05 } })
    assert.are.equal("launch_error", r.verdict)
    assert.truthy(r.reason:find("out of range", 1, true), r.reason)
    ev:close()
    os.execute("rm -rf " .. dir)
  end)

  it("a task with neither a reference nor a check is refused naming both", function()
    local dir = sum_with(nil)
    local side = util.read_file(dir .. "/sum_check.lua")
    side = side:gsub("  check = function%(c%).-\n  end,\n", "  reference = false,\n")
    local f = assert(io.open(dir .. "/sum_check.lua", "w"))
    f:write(side)
    f:close()
    local task, err = taskmod.load(dir .. "/sum_check.c")
    assert.is_nil(task)
    assert.truthy(err:find("neither a reference nor a check", 1, true), err)
    os.execute("rm -rf " .. dir)
  end)

  it("a check that is not a function is refused at load", function()
    local dir = sum_with(nil)
    local side = util.read_file(dir .. "/sum_check.lua"):gsub("  check = function%(c%).-\n  end,\n", '  check = "sum",\n')
    local f = assert(io.open(dir .. "/sum_check.lua", "w"))
    f:write(side)
    f:close()
    local task, err = taskmod.load(dir .. "/sum_check.c")
    assert.is_nil(task)
    assert.truthy(err:find("check", 1, true), err)
    os.execute("rm -rf " .. dir)
  end)
end)
