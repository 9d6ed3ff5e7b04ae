-- tests/spec/types_spec.lua: element types (issue 16 item 8): vector buffers counted in
-- vectors and handled lane by lane, a type chosen by a tunable, half outputs and their
-- tolerance; at load, in the evaluator's per-point check, and end to end on the sim
-- evaluator (tests/spec/support/sim_evaluator.lua).
local taskmod = require("kloop.eval.task")
local util = require("kloop.util")
local simev = require("tests.spec.support.sim_evaluator")

local dir = os.tmpname()
os.remove(dir)
assert(util.mkdir_p(dir))

-- Writes a sidecar (and its kernel) into the spec's folder; returns the sidecar's path.
local function files(name, sidecar, kernel, ext)
  assert(util.write_file(dir .. "/" .. name .. (ext or ".cu"), kernel))
  assert(util.write_file(dir .. "/" .. name .. ".lua", sidecar))
  return dir .. "/" .. name .. ".lua"
end

local function refusal(path)
  local task, err = taskmod.load(path)
  assert.is_nil(task)
  return err
end

local VEC_CU = [[extern "C" __global__ void vs(float4 *y, const float4 *x, int n) { }]]
local VEC_LUA = [[
return kloop.task {
  name = "vs", entry = "vs",
  args = { { "y", "float4*", size = "N / 4", output = true }, { "x", "const float4*", size = "N / 4" },
    { "n", "int", value = "N / 4" } },
  sizes = { bench = { N = 4096 }, check = { { N = 64 } } },
  launch = function(s) return { grid = { cdiv(s.N / 4, 128) }, block = { 128 } } end,
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
  %s
}
]]

describe("element types at load", function()
  it("counts a float4 buffer in vectors and hands the worker its floats", function()
    local task = assert(taskmod.load(files("vs", VEC_LUA:format(""), VEC_CU)))
    assert.are.same({ "f32", 4, "float4" }, { task.args[2].dtype, task.args[2].lanes, task.args[2].elem })
    local args = taskmod.concrete_args(task, { N = 64 })
    assert.are.same({ count = 64, elems = 16, lanes = 4, dtype = "f32", elem = "float4" }, args[2])
    assert.are.equal(16, args[3].value)
  end)

  it("reads double2, int4 and half2 as their scalars", function()
    for ty, want in pairs({ double2 = { "f64", 2 }, int4 = { "i32", 4 }, half2 = { "f16", 2 }, uint2 = { "u32", 2 } }) do
      local ct = taskmod.parse_ctype("const " .. ty .. " *")
      assert.are.same(want, { ct.dtype, ct.lanes }, ty)
    end
  end)

  it("resolves a type a tunable names (Kernel Tuner's floatvector) at each point", function()
    local cu = [[extern "C" __global__ void vs(floatvector *y, const floatvector *x, int n) { (void)VEC; }]]
    local lua = [[
return kloop.task {
  name = "vs", entry = "vs",
  params = { floatvector = { "float", "float4" }, VEC = { 1, 4 } },
  constraint = function(p) return (p.floatvector == "float4") == (p.VEC == 4) end,
  args = { { "y", "floatvector*", size = "N / VEC", output = true }, { "x", "const floatvector*", size = "N / VEC" },
    { "n", "int", value = "N / VEC" } },
  sizes = { bench = { N = 4096 }, check = { { N = 64 } } },
  launch = function(s) return { grid = { cdiv(s.N / s.VEC, 128) }, block = { 128 } } end,
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
]]
    local task = assert(taskmod.load(files("vt", lua, cu)))
    assert.are.same({ "f32", 1, "float" }, { task.args[1].dtype, task.args[1].lanes, task.args[1].elem })
    local at4 = taskmod.concrete_args(task, { N = 64 }, { floatvector = "float4", VEC = 4 })
    assert.are.same({ 64, 16, 4, "float4" }, { at4[1].count, at4[1].elems, at4[1].lanes, at4[1].elem })
    assert.are.equal(16, at4[3].value)
    -- a value of the parameter kloop does not know is refused at load, naming the value
    local bad = lua:gsub('"float4" }', '"float5" }')
    local err = refusal(files("vt", bad, cu))
    assert.matches("vt.lua: params.floatvector[2]: unknown type 'float5' (what floatvector stands for here)", err, 1, true)
    -- and one that changes the scalar type
    err = refusal(files("vt", (lua:gsub('"float4" }', '"double2" }')), cu))
    assert.matches("params.floatvector[2]: makes y's element double2 (f64), its first value float (f32)", err, 1, true)
  end)

  it("takes the element type from type = function(p) for a typedef'd parameter", function()
    local cu = [[
#if VEC == 4
typedef float4 vec_t;
#else
typedef float vec_t;
#endif
extern "C" __global__ void vs(vec_t *y, const vec_t *x, int n) { }]]
    local lua = [[
local vt = function(p) return p.VEC == 4 and "float4" or "float" end
return kloop.task {
  name = "vs", entry = "vs", params = { VEC = { 4, 1 } },
  args = { { "y", "vec_t*", size = "N / VEC", output = true, type = vt }, { "x", "const vec_t*", size = "N / VEC", type = vt },
    { "n", "int", value = "N / VEC" } },
  sizes = { bench = { N = 4096 }, check = { { N = 64 } } },
  launch = function(s) return { grid = { cdiv(s.N / s.VEC, 128) }, block = { 128 } } end,
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
]]
    local task = assert(taskmod.load(files("vtd", lua, cu)))
    assert.are.same({ 4, "float4" }, { task.args[1].lanes, task.args[1].elem })
    local at1 = taskmod.concrete_args(task, { N = 64 }, { VEC = 1 })
    assert.are.same({ 64, 64, 1, "float" }, { at1[1].count, at1[1].elems, at1[1].lanes, at1[1].elem })
    -- without `type` the typedef's name is unknown: the fix says how to name it
    local err = refusal(files("vtd", (lua:gsub(", type = vt", "")), cu))
    assert.matches("args[1]: unknown type 'vec_t'", err, 1, true)
    assert.matches('type = "float4" or type = function(p) ... end', err, 1, true)
    err = refusal(files("vtd", (lua:gsub('local vt = function%(p%) return p.VEC == 4 and "float4" or "float" end',
      "local vt = function(p) return 4 end")), cu))
    assert.matches("args[1].type: unknown type '4'", err, 1, true)
  end)

  it("refuses a buffer whose float count changes with a parameter, and vector or half scalars", function()
    local lua = VEC_LUA:format(""):gsub('"N / 4", output', '"N / VEC", output'):gsub("entry = \"vs\",",
      'entry = "vs", params = { VEC = { 4, 2 } },')
    local cu = VEC_CU:gsub("{ }", "{ (void)VEC; }")
    local err = refusal(files("vs", lua, cu))
    assert.matches("args[1].size: y has 2048 float4 at VEC = 2, 1024 float4 at the default point: only a scratch buffer may change size",
      err, 1, true)
    err = refusal(files("vs", VEC_LUA:format(""):gsub('{ "n", "int", value = "N / 4" }', '{ "n", "float2", value = "N" }'),
      (VEC_CU:gsub("int n", "float2 n"))))
    assert.matches("args[3]: scalar 'n' of vector type float2 is not supported (fix: pass its lanes as separate scalars)", err, 1, true)
    err = refusal(files("vs", VEC_LUA:format(""):gsub('{ "n", "int", value = "N / 4" }', '{ "n", "half", value = "N" }'),
      (VEC_CU:gsub("int n", "half n"))))
    assert.matches("scalar 'n' of type half is not supported (fix: pass it as a float and convert it in the kernel)", err, 1, true)
  end)
end)

describe("half and bfloat16 outputs", function()
  local cu = [[#include <cuda_fp16.h>
extern "C" __global__ void hs(half *y, const float *x, int n) { }]]
  local function lua(tol, ty)
    return ([[
return kloop.task {
  name = "hs", entry = "hs",
  args = { { "y", "TY*", size = "N", output = true }, { "x", "const float*", size = "N" }, { "n", "int", value = "N" } },
  sizes = { bench = { N = 4096 }, check = { { N = 64 } } },
  launch = function(s) return { grid = { cdiv(s.N, 128) }, block = { 128 } } end,
  cost = function(s) return { flops = s.N, bytes = 6 * s.N } end,
  %s
}
]]):gsub("TY", ty or "half"):format(tol or "")
  end
  it("gets a default rel the type can meet, and a rel it cannot is refused with the fix", function()
    local task = assert(taskmod.load(files("hs", lua(), cu)))
    assert.are.equal(16 * 2 ^ -11, task.tolerance.rel)
    local err = refusal(files("hs", lua("tolerance = { rel = 1e-5 },"), cu))
    assert.matches("hs.lua: tolerance.rel: 1e-05 is tighter than a half output can meet: rounding to it alone costs up to 0.00049",
      err, 1, true)
    assert.matches("(fix: remove it (the default for half is 0.0078) or give rel >= 0.00049)", err, 1, true)
    assert(taskmod.load(files("hs", lua("tolerance = { rel = 1e-3 },"), cu)))
    local bcu = cu:gsub("half %*y", "__nv_bfloat16 *y"):gsub("cuda_fp16", "cuda_bf16")
    task = assert(taskmod.load(files("hs", lua(nil, "__nv_bfloat16"), bcu)))
    assert.are.equal(16 * 2 ^ -8, task.tolerance.rel)
    err = refusal(files("hs", lua("tolerance = { rel = 1e-3 },", "__nv_bfloat16"), bcu))
    assert.matches("tighter than a __nv_bfloat16 output can meet", err, 1, true)
  end)
end)

-- End to end on the sim evaluator: kernels are Lua over host memory (a .sim "module").
local SIM_HEAD = [[
local ffi = require("ffi")
local buf = require("kloop.core.buf")
local function ptr(p, i, ct) return ffi.cast(ct, ffi.cast("uint64_t*", p[i])[0]) end
local function int(p, i) return ffi.cast("int32_t*", p[i])[0] end
]]

describe("element types end to end (sim)", function()
  -- y = 2x over N float4 (4N floats); the reference in float64, float* over the same floats
  local KERNEL = SIM_HEAD .. [[
-- extern "C" __global__ void v2(float4 *y, const float4 *x, int n);
return { v2 = function(p)
  local y, x, n = ptr(p, 0, "float*"), ptr(p, 1, "float*"), int(p, 2)
  for i = 0, 4 * n - 1 do y[i] = 2 * x[i] end
end }
]]
  local REF = SIM_HEAD .. [[
-- extern "C" __global__ void v2_ref(double *y, const float *x, int n);
return { v2_ref = function(p)
  local y, x, n = ptr(p, 0, "double*"), ptr(p, 1, "float*"), int(p, 2)
  for i = 0, 4 * n - 1 do y[i] = 2 * x[i] end
end }
]]
  local SIDECAR = [[
return kloop.task {
  name = "v2", entry = "v2", kernel = "v2.sim",
  params = { VEC = { 1, 2 } },
  args = { { "y", "float4*", size = "N", output = true }, { "x", "const float4*", size = "N" }, { "n", "int", value = "N" } },
  sizes = { bench = { N = 256 }, check = { { N = 37 }, { N = 1 } } },
  launch = { grid = { 1 }, block = { 1 } },
  reference = { source = "v2_ref.sim", entry = "v2_ref", precision = "f64" },
  flush_cache = false,
  cost = function(s) return { flops = 4 * s.N, bytes = 32 * s.N + 0 * s.VEC } end,
}
]]
  assert(util.write_file(dir .. "/v2_ref.sim", REF))
  local path = files("v2", SIDECAR, KERNEL, ".sim")

  it("verifies a float4 kernel lane by lane, and names the lane a wrong one got wrong", function()
    local task = assert(simev.load_task(path))
    local ev = simev.new(task)
    local r = ev:evaluate(KERNEL, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    -- element 5's .z (lane 2) is off: the evidence's index counts floats
    r = ev:evaluate((KERNEL:gsub("y%[i%] = 2 %* x%[i%] end", "y[i] = 2 * x[i] end; y[4 * 5 + 2] = y[4 * 5 + 2] + 1")), {})
    assert.are.equal("wrong", r.verdict)
    assert.are.equal(22, r.evidence.index)
    -- the last vector unwritten: unwritten at float 4(n-1)
    r = ev:evaluate((KERNEL:gsub("4 %* n %- 1 do", "4 * n - 5 do")), {})
    assert.are.equal("unwritten", r.verdict)
    ev:close()
  end)

  it("refuses a point whose buffers differ from the worker's, without running it", function()
    local task = assert(simev.load_task(path))
    -- (a task that slipped past the load check: the count depends on VEC after all)
    task.args[1].size = function(s) return s.N * s.VEC end
    local ev = simev.new(task)
    local r = ev:evaluate(KERNEL, { defines = { VEC = 2 } })
    assert.are.equal("launch_error", r.verdict)
    assert.matches("y has 296 elements at this point on check1, 148 at the reference's: only a scratch buffer", r.reason, 1, true)
    ev:close()
  end)

  it("verifies a half output against a float64 reference at the half default", function()
    local hk = SIM_HEAD .. [[
-- extern "C" __global__ void h2(half *y, const float *x, int n);
return { h2 = function(p)
  local y, x, n = ptr(p, 0, "uint16_t*"), ptr(p, 1, "float*"), int(p, 2)
  local t = ffi.new("float[?]", math.max(n, 1))
  for i = 0, n - 1 do t[i] = x[i] / 3 end
  buf.convert(t, "f32", y, "f16", n)
end }
]]
    local href = SIM_HEAD .. [[
-- extern "C" __global__ void h2_ref(double *y, const float *x, int n);
return { h2_ref = function(p)
  local y, x, n = ptr(p, 0, "double*"), ptr(p, 1, "float*"), int(p, 2)
  for i = 0, n - 1 do y[i] = x[i] / 3 end
end }
]]
    assert(util.write_file(dir .. "/h2_ref.sim", href))
    local side = SIDECAR:gsub("v2", "h2"):gsub('"float4%*"', '"half*"'):gsub('"const float4%*"', '"const float*"')
    local task = assert(simev.load_task(files("h2", side, hk, ".sim")))
    local ev = simev.new(task)
    local r = ev:evaluate(hk, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    -- a kernel that drops to 8 bits of mantissa is wrong at the half default
    r = ev:evaluate((hk:gsub("x%[i%] / 3 end", "x[i] / 3 end; for i = 0, n - 1 do t[i] = math.floor(t[i] * 32) / 32 end")), {})
    assert.are.equal("wrong", r.verdict)
    ev:close()
  end)
end)

describe("shipped tasks (kernels/: issue 16)", function()
  local core = require("kloop.core.ffi")
  local evaluator = require("kloop.eval.evaluator")
  local root = require("kloop.native").source_dir .. "/kernels/"
  it("load, and their references compile at the reference's point", function()
    local reduce = assert(taskmod.load(root .. "reduce.lua"))
    assert.are.same({ "scratch", "f32", "float" }, { reduce.args[2].role, reduce.args[1].dtype, reduce.args[1].elem })
    local conv = assert(taskmod.load(root .. "conv2d.lua"))
    assert.are.equal("filter", conv.symbols[1].name)
    local tmpl = assert(taskmod.load(root .. "axpy_tmpl.lua"))
    assert.are.equal("axpy_t<ITEMS, BS>", tmpl.entry)
    if core.nvrtc_version() == nil then pending("no NVRTC here: the references are not compiled") return end
    for _, task in ipairs({ reduce, conv, tmpl }) do
      local ev = evaluator.new(task)
      ev.arch = "sm_90"
      local job = ev:compile_source(task.reference.source, { entries = { task.reference.entry }, name = "ref.cu" })
      assert.is_true(job.ok, task.name .. ": " .. tostring(job.log))
    end
  end)
end)

describe("kloop import-kt: vector types", function()
  it("imports float4 arguments (Size counts vectors), and the sidecar loads", function()
    local kt = require("kloop.cli.import_kt")
    local src = require("kloop.native").source_dir .. "/tests/import_kt/"
    local t1 = require("cjson").decode((assert(util.read_file(src .. "vscale.json"))))
    local cu = assert(util.read_file(src .. "vscale.cu"))
    local side = kt.sidecar(t1, "vscale.json", cu)
    assert.matches('{ "y", "float4*", size = "NX", output = true }', side, 1, true)
    assert.matches("bytes = 16 * (s.NX) + 16 * (s.NX)", side, 1, true)
    local task = assert(taskmod.load(files("vscale", side, cu)))
    assert.are.same({ "f32", 4 }, { task.args[2].dtype, task.args[2].lanes })
    assert.are.equal(4 * 1000, taskmod.concrete_args(task, { NX = 1000 })[2].count)
    -- a vector scalar is refused, naming the field
    t1.KernelSpecification.Arguments[3].Type = "float2"
    local ok, e = pcall(kt.sidecar, t1, "vscale.json", cu)
    assert.is_false(ok)
    assert.matches("vscale.json: KernelSpecification.Arguments[3].Type: a scalar of vector type float2 is not supported",
      e.message, 1, true)
  end)
end)
