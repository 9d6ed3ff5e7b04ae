-- tests/spec/task_spec.lua: task sidecars load, and every mistake is refused with a
-- message naming the file, the field and the fix.
local taskmod = require("kloop.task")
local plan = require("kloop.plan")

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

describe("kloop.task", function()
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
