-- tests/spec/task_params_spec.lua: kernels as autotuning users write them (issue 16):
-- C++ entry names, tunables wherever a size appears, input roles by declaration.
local taskmod = require("kloop.eval.task")
local plan = require("kloop.eval.plan")
local compile = require("kloop.eval.compile")
local core = require("kloop.core.ffi")

local function write_task(sidecar, kernel)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local f = assert(io.open(dir .. "/k.cu", "w"))
  f:write(kernel)
  f:close()
  f = assert(io.open(dir .. "/k.lua", "w"))
  f:write(sidecar)
  f:close()
  return dir .. "/k.cu"
end

local TEMPLATE = [[
#ifndef BM
#define BM 64
#endif
template <int TB, int TK>
__global__ void gemm(int N, const float *x, float *y) {
  int i = blockIdx.x * TB + threadIdx.x;
  if (i < N) y[i] = TK * x[i];
}
__global__ void plain(int N, const float *x, float *y) {}
template __global__ void gemm<BM, 8>(int, const float *, float *);
]]

local PARTIAL = [[
extern "C" __global__ void partial(int N, int nb, float *x, float *sums, float *total) {
  __shared__ float s[BS];
  (void)s;
}
]]

local PARTIAL_TASK = [[
return kloop.task {
  name = "partial", entry = "partial",
  args = { {"N", "int"}, {"nb", "int", value = "num_blocks"}, {"x", "float*", size = "N", input = true},
           {"sums", "float*", size = function(s) return s.num_blocks end, scratch = true},
           {"total", "float*", size = 1, output = true} },
  sizes = { bench = {N = 1048576}, check = {{N = 1000}, {N = 1}} },
  params = { BS = {128, 256}, num_blocks = {32, 64} },
  launch = function(s) return {grid = {s.num_blocks}, block = {s.BS}, smem = 0} end,
  cost = function(s) return {flops = s.N, bytes = 4 * s.N + 4 * s.num_blocks} end,
}
]]

describe("kloop.compile: C++ entry names", function()
  local have_nvrtc = core.nvrtc_version() ~= nil

  it("fences name expressions and substitutes parameters first", function()
    assert.are.equal("gemm<128, 8>", compile.name_expression("gemm<BM, 8>", { BM = 128 }, ""))
    assert.are.equal("gemm<64, 8>", compile.name_expression("gemm<BM, 8>", {}, "#define BM 64\n"))
    assert.are.equal("ns::gemm<float>", compile.name_expression("ns::gemm<float>", nil, ""))
    assert.is_nil((compile.name_expression("gemm<1>(); system(\"x\")", nil, "")))
    assert.is_nil((compile.name_expression("a:b", nil, "")))
    assert.is_nil((compile.name_expression("gemm<BM>", { BM = "1);x(" }, "")))
    assert.is_true(compile.needs_lowering("gemm<1>", 'extern "C"'))
    assert.is_false(compile.needs_lowering("scale", 'extern "C" __global__ void scale() {}'))
    assert.is_true(compile.needs_lowering("plain", "__global__ void plain() {}"))
  end)

  it("returns the lowered names of template instances and plain C++ kernels", function()
    if not have_nvrtc then pending("no NVRTC here") return end
    local entries = { "gemm<BM, 8>", "gemm<128, 8>", "plain" }
    local job = compile.compile(TEMPLATE, { arch = "sm_90", name = "t.cu", defines = { BM = 128 }, entries = entries })
    assert.is_true(job.ok, job.log)
    assert.are.equal("_Z4gemmILi128ELi8EEviPKfPf", job.lowered["gemm<BM, 8>"])
    assert.are.equal("_Z4gemmILi128ELi8EEviPKfPf", job.lowered["gemm<128, 8>"])
    assert.are.equal("_Z5plainiPKfPf", job.lowered["plain"])
    assert.truthy(job.resources["_Z4gemmILi128ELi8EEviPKfPf"])
    -- from the cache, the same map
    local again = compile.compile(TEMPLATE, { arch = "sm_90", name = "t.cu", defines = { BM = 128 }, entries = entries })
    assert.is_true(again.cached)
    assert.are.same(job.lowered, again.lowered)
    -- the source's own #define when no parameter is given
    local dflt = compile.compile(TEMPLATE, { arch = "sm_90", name = "t.cu", entries = { "gemm<BM, 8>" } })
    assert.are.equal("_Z4gemmILi64ELi8EEviPKfPf", dflt.lowered["gemm<BM, 8>"])
  end)

  it("an unknown entry is a compile error, a hostile one rejected", function()
    if not have_nvrtc then pending("no NVRTC here") return end
    local job = compile.compile(TEMPLATE, { arch = "sm_90", entries = { "nothere<1>" } })
    assert.is_false(job.ok)
    local bad = compile.compile(TEMPLATE, { arch = "sm_90", entries = { "gemm<1>();int x" } })
    assert.is_true(bad.rejected)
    assert.matches("not a kernel name", bad.log, 1, true)
  end)

  it("a task may name a template entry", function()
    local cu = write_task([[
return kloop.task {
  name = "t", entry = "gemm<BM, 8>",
  args = { {"N", "int"}, {"x", "const float*", size = "N"}, {"y", "float*", size = "N", output = true} },
  sizes = { bench = {N = 4096}, check = {{N = 10}} },
  params = { BM = {64, 128} },
  launch = function(s) return {grid = {cdiv(s.N, s.BM)}, block = {s.BM}} end,
  cost = function(s) return {flops = s.N, bytes = 8 * s.N} end,
}
]], TEMPLATE)
    local t = assert(taskmod.load(cu))
    assert.are.equal("gemm<BM, 8>", t.entry)
    local p = plan.for_task(t, { N = 4096 }, nil, { BM = 128 })
    assert.are.same({ 32, 1, 1 }, p[1].grid)
    assert.are.equal("gemm<BM, 8>", p[1].entry)
  end)
end)

describe("kloop.task: tunables wherever a size appears", function()
  it("launch, buffer sizes, scalar values and cost see the parameters", function()
    local t = assert(taskmod.load(write_task(PARTIAL_TASK, PARTIAL)))
    local size = { N = 1000 }
    local p = plan.for_task(t, size, nil, { BS = 256, num_blocks = 64 })
    assert.are.same({ 64, 1, 1 }, p[1].grid)
    assert.are.same({ 256, 1, 1 }, p[1].block)
    local args = taskmod.concrete_args(t, size, { BS = "256", num_blocks = "64" }) -- defines may be strings
    assert.are.equal(1000, args[1].value)
    assert.are.equal(64, args[2].value)
    assert.are.equal(1000, args[3].count)
    assert.are.equal(64, args[4].count)
    local c = t.cost(taskmod.with_params(size, { num_blocks = 32 }))
    assert.are.equal(4 * 1000 + 4 * 32, c.bytes)
    -- implicit parameters (kloop_*) are not for the sidecar, and a size wins on a clash
    local m = taskmod.with_params({ N = 5 }, { N = 7, kloop_block = "16x16", X = 2 })
    assert.are.same({ N = 5, X = 2 }, m)
    assert.are.equal(size, taskmod.with_params(size, nil))
  end)

  it("a size expression names a parameter; an unknown name is still refused", function()
    local t = assert(taskmod.load(write_task((PARTIAL_TASK:gsub('function%(s%) return s.num_blocks end', '"num_blocks * 2"')), PARTIAL)))
    assert.are.equal(128, taskmod.concrete_args(t, { N = 10 }, { num_blocks = 64 })[4].count)
    local cu = write_task((PARTIAL_TASK:gsub('function%(s%) return s.num_blocks end', '"nblocks"')), PARTIAL)
    local bad, err = taskmod.load(cu)
    assert.is_nil(bad)
    assert.matches("args[4].size", err, 1, true)
  end)
end)

describe("kloop.task: roles by declaration", function()
  it("a plain float* declared input = true is an input", function()
    local t = assert(taskmod.load(write_task(PARTIAL_TASK, PARTIAL)))
    assert.are.equal("float*", t.args[3].ctype)
    assert.are.equal("input", t.args[3].role)
    assert.are.equal(2, #t.args[3].dists)
  end)

  it("refuses two roles, and input on a scalar", function()
    local _, err = taskmod.load(write_task((PARTIAL_TASK:gsub("input = true", "input = true, output = true")), PARTIAL))
    assert.matches("args[3]: give a buffer one role", err, 1, true)
    _, err = taskmod.load(write_task((PARTIAL_TASK:gsub('{"N", "int"}', '{"N", "int", input = true}')), PARTIAL))
    assert.matches("args[1].input", err, 1, true)
    _, err = taskmod.load(write_task((PARTIAL_TASK:gsub("input = true", "input = 1")), PARTIAL))
    assert.matches("args[3].input: expected boolean", err, 1, true)
  end)
end)

describe("kloop.compile: which entries need lowering", function()
  it("looks at code, not comments", function()
    assert.is_true(require("kloop.eval.compile").needs_lowering("k", '// no extern "C" here\n__global__ void k() {}'))
    assert.is_false(require("kloop.eval.compile").needs_lowering("k", 'extern "C" __global__ void k() {}'))
  end)
end)

describe("kloop.cli.import_kt", function()
  local kt = require("kloop.cli.import_kt")
  local KSRC = 'extern "C" __global__ void k(float *y, float *x, int n) { (void)block_size_x; }\n'
  local function t1(over)
    local t = {
      ConfigurationSpace = { TuningParameters = { { Name = "block_size_x", Type = "int", Values = "[32, 64]", Default = 64 } },
        Conditions = { { Parameters = { "block_size_x" }, Expression = "block_size_x // 32 != 3 and not block_size_x == 16" } } },
      KernelSpecification = { Language = "CUDA", KernelName = "k", KernelFile = "k.cu", ProblemSize = { 4096 },
        LocalSize = { X = "block_size_x" }, GridDivX = { "block_size_x" },
        Arguments = { { Name = "y", Type = "float", MemoryType = "Vector", AccessType = "WriteOnly", Size = 4096 },
          { Name = "x", Type = "float", MemoryType = "Vector", AccessType = "ReadOnly", Size = 4096 },
          { Name = "n", Type = "int32", MemoryType = "Scalar", FillValue = 4096 } } },
    }
    if over then over(t) end
    return t
  end
  it("maps tunables, restrictions, grid divisors and roles", function()
    local side = kt.sidecar(t1(), "k.json", KSRC)
    assert.matches('block_size_x = { 64, 32 }', side, 1, true)
    assert.matches("floor(p.block_size_x / 32) ~= 3 and not p.block_size_x == 16", side, 1, true)
    assert.matches("grid = { cdiv(s.NX, s.block_size_x) }", side, 1, true)
    assert.matches('{ "x", "float*", size = "NX", input = true', side, 1, true)
    assert.matches('{ "n", "int", value = "NX" }', side, 1, true)
    -- and what it writes loads as a task
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    require("kloop.util").write_file(dir .. "/k.cu", KSRC)
    require("kloop.util").write_file(dir .. "/k.lua", side)
    local task = assert(taskmod.load(dir .. "/k.cu"))
    assert.are.equal("input", task.args[2].role)
    local space = require("kloop.search.tune").space(task)
    assert.are.equal(2, space.size)
  end)
  it("refuses what it cannot map, naming the field", function()
    local function refusal(over)
      local ok, e = pcall(kt.sidecar, t1(over), "k.json", KSRC)
      assert.is_false(ok)
      return e.message
    end
    assert.matches("k.json: KernelSpecification.Arguments[1].Type: 'float3' is not mapped",
      refusal(function(t) t.KernelSpecification.Arguments[1].Type = "float3" end), 1, true)
    assert.matches("KernelSpecification.ProblemSize: missing",
      refusal(function(t) t.KernelSpecification.ProblemSize = nil end), 1, true)
    assert.matches("KernelSpecification.GridDivX[1]: 'tile' is not a tunable",
      refusal(function(t) t.KernelSpecification.GridDivX = { "tile" } end), 1, true)
    assert.matches("Conditions[1].Expression: 'in' in",
      refusal(function(t) t.ConfigurationSpace.Conditions[1].Expression = "block_size_x in [32]" end), 1, true)
    assert.matches("KernelSpecification.Arguments: lists 2 arguments, k takes 3",
      refusal(function(t) t.KernelSpecification.Arguments[3] = nil end), 1, true)
  end)
end)

describe("the point a source is compiled at", function()
  it("fills a parameter the source does not #define with its first value, keeps the source's own", function()
    local task = { params = { block_size_x = { 128, 256 }, BM = { 32, 64 } } }
    local src = "#ifndef BM\n#define BM 64\n#endif\n__global__ void k() { int b = block_size_x; }\n"
    assert.are.same({ block_size_x = 128 }, taskmod.fill_defaults(task, src, nil))
    assert.are.same({ block_size_x = 256, BM = 32 }, taskmod.fill_defaults(task, src, { block_size_x = 256, BM = 32 }))
    assert.are.same({ kloop_block = "16x16", block_size_x = 128 }, taskmod.fill_defaults(task, src, { kloop_block = "16x16" }))
  end)
end)
