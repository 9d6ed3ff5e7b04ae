-- tests/spec/task_spec.lua: task sidecars load, and every mistake is refused with a
-- message naming the file, the field and the fix.
local taskmod = require("kloop.eval.task")
local plan = require("kloop.eval.plan")

local KERNEL = [[
extern "C" __global__ void scale(int N, const float *__restrict__ x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = 2.0f * x[i];
}
]]

local GOOD = [[
return kloop.task {
  name = "scale", entry = "scale",
  args = { {"N", "int"}, {"x", "const float*", size = "N"}, {"y", "float*", size = "N", output = true} },
  sizes = { bench = {N = 1048576}, check = {{N = 1000}, {N = 1}} },
  launch = function(s) return {grid = {cdiv(s.N, 256)}, block = {256}} end,
  cost = function(s) return {flops = s.N, bytes = 8 * s.N} end,
}
]]

local function write_task(sidecar, kernel)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local f = assert(io.open(dir .. "/scale.cu", "w"))
  f:write(kernel or KERNEL)
  f:close()
  f = assert(io.open(dir .. "/scale.lua", "w"))
  f:write(sidecar)
  f:close()
  return dir .. "/scale.cu", dir .. "/scale.lua"
end

-- GOOD with one replacement applied (plain text).
local function variant(from, to)
  local i, j = GOOD:find(from, 1, true)
  assert(i, "test bug: " .. from)
  return GOOD:sub(1, i - 1) .. to .. GOOD:sub(j + 1)
end

local function refused(sidecar, field, fix, kernel)
  local cu, lua = write_task(sidecar, kernel)
  local t, err = taskmod.load(cu)
  assert.is_nil(t, "expected a refusal")
  assert.matches(lua, err, 1, true)
  assert.matches(field, err, 1, true)
  if fix then assert.matches(fix, err, 1, true) end
  return err
end

describe("kloop.eval.task", function()
  it("loads a good sidecar and infers roles and distributions", function()
    local cu = write_task(GOOD)
    local t = assert(taskmod.load(cu))
    assert.are.equal("scale", t.name)
    assert.are.equal("input", t.args[2].role)
    assert.are.equal("output", t.args[3].role)
    assert.are.equal(2, #t.args[2].dists) -- a second distribution is added
    assert.are.equal(3, #taskmod.cases(t))
    local p = plan.for_task(t, { N = 1000 })
    assert.are.same({ 4, 1, 1 }, p[1].grid)
  end)

  it("refuses a missing entry", function()
    refused(variant('entry = "scale",', ""), "entry", "add entry")
  end)

  it("refuses a size expression that does not evaluate", function()
    local s = variant('size = "N"}', 'size = "N * Q"}')
    refused(s, "args[2].size", "use only the size names")
  end)

  it("refuses an argument list that does not match the kernel", function()
    local s = variant('{"N", "int"}, ', "")
    refused(s, "args", "takes 3")
  end)

  it("refuses a type that does not match the kernel's parameter", function()
    local s = variant('"const float*", size', '"const double*", size')
    refused(s, "args[2]", "does not match the kernel's parameter 2")
  end)

  it("refuses a non-const buffer without a role", function()
    local s = variant(', output = true', "")
    refused(s, "args[3]", "add output = true")
  end)

  it("refuses an unknown distribution", function()
    local s = variant('size = "N"}', 'size = "N", init = "gaussian(0)"}')
    refused(s, "args[2].init", "uniform(a,b)")
  end)

  it("refuses a check size with other keys than bench", function()
    local s = variant("{N = 1000}", "{M = 1000}")
    refused(s, "sizes.check[1]")
  end)

  it("takes extra profiler metrics, and refuses what is not a metric name", function()
    local cu = write_task(variant("  cost =", '  metrics = {"smsp__inst_executed.sum"},\n  cost ='))
    local t = assert(taskmod.load(cu))
    assert.are.same({ "smsp__inst_executed.sum" }, t.metrics)
    refused(variant("  cost =", '  metrics = {"inst executed"},\n  cost ='), "metrics", "names as ncu spells them")
    refused(variant("  cost =", '  metrics = "dram__bytes_read.sum",\n  cost ='), "metrics")
  end)

  it("refuses a missing cost model", function()
    local s = GOOD:gsub("  cost = [^\n]*\n", "")
    refused(s, "cost", "add cost = function")
  end)

  it("refuses a launch plan with too many threads", function()
    local s = variant("block = {256}", "block = {4096}")
    refused(s, "launch", "exceeds 1024")
  end)

  it("refuses a Lua syntax error with the file and line", function()
    local cu, lua = write_task("return kloop.task { name = }")
    local t, err = taskmod.load(cu)
    assert.is_nil(t)
    assert.matches(lua .. ":1:", err, 1, true)
  end)

  it("refuses a kernel without the entry", function()
    refused(GOOD, "entry", 'extern "C" __global__', KERNEL:gsub("scale%(", "other("))
  end)

  it("says where the sidecar was expected", function()
    local t, err = taskmod.load("/nonexistent/k.cu")
    assert.is_nil(t)
    assert.matches("/nonexistent/k.lua", err, 1, true)
  end)

  it("refuses parameters the kernel never uses", function()
    local s = variant("  cost =", "  params = {TILE = {16, 32}},\n  cost =")
    refused(s, "params.TILE", "remove it")
  end)
end)

describe("kloop.plan.from_source", function()
  it("reads launch comments with sizes and #defines in scope", function()
    local f = plan.from_source("#define T 128\n// kloop: launch grid = {cdiv(N, T)}, block = {T}\n", "k")
    local p = assert(f({ N = 1000 }))
    assert.are.same({ 8, 1, 1 }, p[1].grid)
    assert.are.same({ 128, 1, 1 }, p[1].block)
  end)

  it("bounds the work a launch comment may do", function()
    local f = plan.from_source("// kloop: launch grid = {(function() while true do end end)()}, block = {1}\n", "k")
    local p, err = f({ N = 1 })
    assert.is_nil(p)
    assert.matches("unknown function 'function'", err, 1, true)
  end)

  it("keeps the sandbox closed (no io, os, require)", function()
    local f = plan.from_source("// kloop: launch grid = {os.exit(1)}, block = {1}\n", "k")
    local p, err = f({ N = 1 })
    assert.is_nil(p)
    assert.matches("os", err)
  end)
end)

-- Issue 13: misspelt or mistyped fields used to be ignored (verdict ok, setting lost),
-- and an endless loop in a sidecar ignored Ctrl-C.
describe("kloop.task strictness", function()
  local REF = [[
extern "C" __global__ void scale_ref(int N, const float *x, double *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) y[i] = 2.0 * x[i];
}
]]
  local function with_ref(sidecar)
    local cu, lua = write_task(sidecar)
    local f = assert(io.open(cu:gsub("scale%.cu$", "scale_ref.cu"), "w"))
    f:write(REF)
    f:close()
    return cu, lua
  end
  local function top(field) return variant("  cost =", "  " .. field .. ",\n  cost =") end

  it("refuses unknown top-level fields with the closest known one", function()
    refused(top("tolerence = { rel = 1e-3 }"), "tolerence", "did you mean 'tolerance'?")
    refused(top("flush_cahce = false"), "flush_cahce", "did you mean 'flush_cache'?")
    refused(top("deadlien = 60"), "deadlien", "rename it deadline")
    local err = refused(top("colour = 1"), "colour", "remove it")
    assert.matches("known here: name, entry", err, 1, true)
    refused(variant("return kloop.task {", 'return kloop.task { "scale",'), "the task table", "unexpected entry [1]")
  end)

  it("refuses unknown fields inside tolerance, reference, sizes and args", function()
    refused(top("tolerance = { rel = 1e-5, maxabs = 1e-3 }"), "tolerance.maxabs", "did you mean 'max_abs'?")
    local cu = with_ref(top('reference = { source = "scale_ref.cu", entry = "scale_ref", precison = "f64" }'))
    local t, err = taskmod.load(cu)
    assert.is_nil(t)
    assert.matches("reference.precison: unknown field 'precison'; did you mean 'precision'?", err, 1, true)
    -- the same reference, spelt right, loads
    assert(taskmod.load(with_ref(top('reference = { source = "scale_ref.cu", entry = "scale_ref", precision = "f64" }'))))
    refused(variant("check = {{N = 1000}, {N = 1}}", "check = {{N = 1000}, {N = 1}}, hiden = {{N = 5}}"),
      "sizes.hiden", "did you mean 'hidden'?")
    refused(variant('size = "N"}', 'size = "N", int = "uniform(0,1)"}'), "args[2].int", "did you mean 'init'?")
    refused(variant('{"N", "int"}', '{"N", "int", "extra"}'), "args[1]", "unexpected entry [3]")
    refused(variant("{N = 1000}", "{n = 1000}"), "sizes.check[1]", "did you mean 'N'?")
  end)

  it("refuses a value of the wrong type everywhere", function()
    refused(top('deadline = "60"'), "deadline", 'the string "60"')
    refused(top('tolerance = { rel = "1e-5" }'), "tolerance.rel", 'expected number, got the string "1e-5"')
    refused(top('tolerance = { max_abs = "0.1" }'), "tolerance.max_abs", "expected number")
    refused(top('tolerance = { deterministic = "exakt" }'), "tolerance.deterministic", "did you mean 'exact'?")
    refused(top('flush_cache = "yes"'), "flush_cache", "expected boolean")
    refused(top('unit = "fp23"'), "unit", "did you mean 'fp32'?")
    refused(top('options = "--use_fast_math"'), "options", "expected a table")
    refused(top('options = { "-rdc=true" }'), "options[1]", "not allowed")
    refused(variant("output = true", "output = 1"), "args[3].output", "expected boolean, got the number 1")
    refused(variant('{"N", "int"}', '{"N", "int", size = "N"}'), "args[1].size", "is not a buffer")
    refused(variant('size = "N"}', "size = {}}"), "args[2].size", "expected string or number or function")
    refused(variant('size = "N"}', 'size = "N", init = 5}'), "args[2].init", "expected string or table")
    refused(variant('{"N", "int"}', '{"N", "int", value = true}'), "args[1].value", "expected string or number")
    refused(variant("{N = 1000}", '{N = "1000"}'), "sizes.check[1].N", 'not the string "1000"')
    refused(variant("block = {256}}", "block = {256}, shmem = 0}"), "launch", "did you mean 'smem'?")
    refused(variant("flops = s.N,", "flop = s.N,"), "cost", "did you mean 'flops'?")
    refused(variant("flops = s.N,", 'flops = "many",'), "cost", "flops must be a non-negative number")
  end)

  it("suggests the kernel's own name for a misspelt parameter", function()
    local kernel = "#ifndef BLOCK\n#define BLOCK 256\n#endif\n" .. KERNEL
    refused(top("params = { BLCOK = {128, 256} }"), "params.BLCOK", "did you mean 'BLOCK'?", kernel)
    refused(top("params = { BLOCK = {128, {}} }"), "params.BLOCK[2]", "a number or a string", kernel)
    local cu = write_task(top("params = { BLOCK = {128, 256} }"), kernel)
    assert(taskmod.load(cu))
  end)

  describe("runs sidecar code under a deadline", function()
    local saved
    before_each(function() saved = taskmod.call_deadline taskmod.call_deadline = 0.3 end)
    after_each(function() taskmod.call_deadline = saved end)

    local function stops(sidecar, what)
      local cu, lua = write_task(sidecar)
      local t0 = require("kloop.core.sys").now()
      local t, err = taskmod.load(cu)
      local dt = require("kloop.core.sys").now() - t0
      assert.is_nil(t)
      assert.is_true(dt < 5, "took " .. dt .. " s")
      assert.matches(lua, err, 1, true)
      assert.matches(what, err, 1, true)
      assert.matches("ran for more than 0.3 s without returning", err, 1, true)
      return err
    end

    it("an endless loop at the sidecar's top level", function()
      local err = stops("while true do end\n" .. GOOD, "the sidecar's top level")
      assert.matches(":1 (an endless loop?)", err, 1, true)
    end)

    it("an endless loop in the launch function", function()
      stops(variant("launch = function(s) return", "launch = function(s) while s do end return"), "the launch function")
    end)

    it("an endless loop in the cost function", function()
      stops(variant("cost = function(s) return", "cost = function(s) local n = 0 while true do n = n + 1 end return"),
        "the cost function")
    end)

    it("an endless loop in a size function, and in a constraint when the tuner calls it", function()
      stops(variant('size = "N"}', 'size = function(s) repeat until false end}'), "the args[2].size function")
      local cu = write_task(top("constraint = function(p) while true do end end"))
      local t = assert(taskmod.load(cu))
      local ok, err = pcall(t.constraint, {})
      assert.is_false(ok)
      assert.matches("the constraint function of", err, 1, true)
    end)
  end)

  it("raises Ctrl-C in a guarded sidecar function as the interruption sentinel", function()
    local sys = require("kloop.core.sys")
    local native = require("kloop.native")
    -- an endless function that sends SIGINT to kloop first (through popen: system()
    -- would ignore the signal while it waits)
    local function endless()
      local p = io.popen("kill -INT " .. sys.getpid())
      p:read("*a")
      p:close()
      while true do end
    end
    local ok, e = pcall(taskmod.guard("k.lua", "launch", endless))
    local was = sys.interrupted()
    native.sigint_reset()
    assert.is_true(was)
    assert.is_false(ok)
    assert.is_true(sys.is_interrupt(e), "got " .. tostring(e))
    -- the guarded call itself also says where it stopped the code
    local okp, e2, where = taskmod.guarded_pcall("the cost function of k.lua", endless)
    native.sigint_reset()
    assert.is_false(okp)
    assert.is_true(sys.is_interrupt(e2))
    assert.matches("^interrupted %(Ctrl%-C%) in the cost function of k%.lua", where)
  end)

  it("stops an endless sidecar at Ctrl-C, naming the file and the function", function()
    local util = require("kloop.util")
    local cu, lua = write_task("local n = 0\nwhile true do n = n + 1 end\n" .. GOOD)
    local cmd = string.format("timeout --preserve-status -s INT -k 5 1 %s check %s 2>&1; echo rc=$?",
      util.shell_quote(require("kloop.core.sys").exe_path()), util.shell_quote(cu))
    local t0 = require("kloop.core.sys").now()
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    assert.is_true(require("kloop.core.sys").now() - t0 < 5, out)
    assert.matches("interrupted (Ctrl-C) in the sidecar's top level at " .. lua .. ":2", out, 1, true)
    assert.matches("rc=1", out, 1, true)
  end)
end)
