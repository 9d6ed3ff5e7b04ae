-- tests/spec/symbols_spec.lua: symbols filled from the host (issue 16 item 5): a task's
-- `symbols` (a __constant__ table, a C global) checked at load, filled per input set for
-- the candidate and the reference alike, a candidate that lacks one or declares another
-- size refused, one that ignores the values wrong; on the sim evaluator and the host
-- backend (a real sandboxed worker).
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local util = require("kloop.util")
local simev = require("tests.spec.support.sim_evaluator")

local dir = os.tmpname()
os.remove(dir)
assert(util.mkdir_p(dir))

local function write(name, text) assert(util.write_file(dir .. "/" .. name, text)) return dir .. "/" .. name end

-- y[i] = filter[i % 5] * x[i]: a CUDA kernel for the load checks
local CU = [[
__constant__ float filter[5];
extern "C" __global__ void fs(float *y, const float *x, int n) { }
]]
local SIDE = [[
return kloop.task {
  name = "fs", entry = "fs", kernel = "%s",
  args = { { "y", "float*", size = "N", output = true }, { "x", "const float*", size = "N" }, { "n", "int", value = "N" } },
  symbols = { %s },
  sizes = { bench = { N = 1000 }, check = { { N = 37 }, { N = 1 } } },
  launch = { grid = { 1 }, block = { 1 } },
  %s
  flush_cache = false,
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
]]
local SYM = '{ "filter", "float", count = 5, init = "uniform(1,2)" }'

local function refusal(kernel, symbols, extra)
  write("fs.cu", kernel or CU)
  local task, err = taskmod.load(write("fs.lua", SIDE:format("fs.cu", symbols or SYM, extra or "")))
  assert.is_nil(task)
  return err
end

describe("symbols at load", function()
  it("reads a declared symbol: name, type, count, two distributions", function()
    write("fs.cu", CU)
    local task = assert(taskmod.load(write("fs.lua", SIDE:format("fs.cu", SYM, ""))))
    assert.are.same({ "filter", "f32", 1 }, { task.symbols[1].name, task.symbols[1].dtype, task.symbols[1].lanes })
    assert.are.equal(2, #task.symbols[1].dists)
    assert.are.same({ { count = 5 } }, taskmod.concrete_symbols(task, { N = 37 }))
  end)

  it("refuses, naming the field and the fix", function()
    assert.matches("fs.lua: symbols[1]: the kernel declares no __constant__ or __device__ symbol 'filter' "
      .. "(fix: declare it at file scope: __constant__ float filter[...];)", refusal((CU:gsub("__constant__ float filter%[5%];", ""))),
      1, true)
    assert.matches("symbols[1]: the kernel declares no", refusal((CU:gsub("__constant__ ", ""))), 1, true)
    assert.matches("symbols[1][2] (type): unknown element type 'floaty'",
      refusal(nil, '{ "filter", "floaty", count = 5 }'), 1, true)
    assert.matches("symbols[1].count: a symbol needs a count (elements) (fix: add count = \"FW*FH\")",
      refusal(nil, '{ "filter", "float" }'), 1, true)
    assert.matches("symbols[1].cont: unknown field 'cont'; did you mean 'count'?",
      refusal(nil, '{ "filter", "float", cont = 5 }'), 1, true)
    assert.matches("symbols[1].count: filter has 37 elements at sizes.check1, 1000 at bench: a module declares one size",
      refusal(nil, '{ "filter", "float", count = "N" }'), 1, true)
    assert.matches("symbols[2]: symbol 'filter' is declared twice", refusal(nil, SYM .. ", " .. SYM), 1, true)
    -- a separate reference must declare it too: its result is computed with the same values
    write("fs_ref.cu", 'extern "C" __global__ void fs_ref(double *y, const float *x, int n) { }')
    assert.matches("symbols[1]: the reference declares no symbol 'filter'",
      refusal(nil, nil, 'reference = { source = "fs_ref.cu", entry = "fs_ref" },'), 1, true)
  end)
end)

describe("symbols end to end (sim)", function()
  local HEAD = [[
local ffi = require("ffi")
local function ptr(p, i, ct) return ffi.cast(ct, ffi.cast("uint64_t*", p[i])[0]) end
]]
  local function kernel(name, body, globals, ytype)
    return HEAD .. string.format([[
-- __constant__ float filter[5]; extern "C" __global__ void %s(%s *y, const float *x, int n);
return { globals = %s, %s = function(p, grid, block, g)
  local y, x, n = ptr(p, 0, "%s*"), ptr(p, 1, "float*"), ffi.cast("int32_t*", p[2])[0]
  local f = g and g.filter and ffi.cast("float*", g.filter)
%s
end }
]], name, ytype or "float", globals or "{ filter = 20 }", name, ytype or "float", body)
  end
  local RIGHT = kernel("fs", "  for i = 0, n - 1 do y[i] = f[i % 5] * x[i] end")
  local REF = kernel("fs_ref", "  for i = 0, n - 1 do y[i] = f[i % 5] * x[i] end", nil, "double")
  write("fs_ref.sim", REF)
  local side = SIDE:format("fs.sim", SYM, 'reference = { source = "fs_ref.sim", entry = "fs_ref", precision = "f64" },')
  write("fs.sim", RIGHT)
  local task = assert(simev.load_task(write("fs.lua", side)))

  it("fills the symbol per input set for the candidate and the reference", function()
    local ev = simev.new(task)
    local r = ev:evaluate(RIGHT, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    -- ignoring the values (a filter of ones) is wrong
    r = ev:evaluate(kernel("fs", "  for i = 0, n - 1 do y[i] = x[i] end"), {})
    assert.are.equal("wrong", r.verdict)
    -- keeping the first values it saw is wrong on the second set
    r = ev:evaluate(kernel("fs", [[
  _G.sym_kept = _G.sym_kept or { f[0], f[1], f[2], f[3], f[4] }
  for i = 0, n - 1 do y[i] = _G.sym_kept[i % 5 + 1] * x[i] end]]), {})
    _G.sym_kept = nil
    assert.are.equal("wrong", r.verdict)
    assert.are.equal(2, r.evidence.set)
    -- and an A/B of two modules with the symbol (each gets every set's values)
    local c = ev:compare(RIGHT, RIGHT .. "\n-- b", { timing = { budget = 0 } })
    assert.are.equal("ok", c.a.verdict, c.a.reason)
    assert.are.equal("ok", c.b.verdict, c.b.reason)
    ev:close()
  end)

  it("refuses a module that lacks the symbol or declares another size", function()
    local ev = simev.new(task)
    local r = ev:evaluate(kernel("fs", "  for i = 0, n - 1 do y[i] = x[i] end", "{}"), {})
    assert.are.equal("launch_error", r.verdict)
    assert.matches("symbol 'filter' not found in the module", r.reason, 1, true)
    r = ev:evaluate(kernel("fs", "  for i = 0, n - 1 do y[i] = f[i % 4] * x[i] end", "{ filter = 16 }"), {})
    assert.are.equal("launch_error", r.verdict)
    assert.matches("symbol 'filter' is 16 bytes in the module, the task declares 5 elements of f32 (20 bytes) (symbols[1])",
      r.reason, 1, true)
    -- the worker goes on
    assert.are.equal("ok", ev:evaluate(RIGHT, { timing = { budget = 0 } }).verdict)
    ev:close()
  end)
end)

describe("symbols on the host backend", function()
  local C = [[
float filter[5];
void fs(float *y, const float *x, int n) { for (int i = 0; i < n; i++) y[i] = filter[i %% 5] * x[i]; }
]]
  it("fills a C global through dlsym, checks its size, and a candidate that ignores it is wrong", function()
    write("fs.c", C:gsub("%%%%", "%%"))
    write("fs_ref.c", 'float filter[5];\nvoid fs_ref(double *y, const float *x, int n) '
      .. '{ for (int i = 0; i < n; i++) y[i] = (double)filter[i % 5] * x[i]; }\n')
    local task = assert(taskmod.load(write("fs.lua",
      SIDE:format("fs.c", SYM, 'reference = { source = "fs_ref.c", entry = "fs_ref", precision = "f64" },'))))
    local ev = eval.new(task, { backend = "host", nsets = 2 })
    local r = ev:evaluate(nil, { timing = { budget = 0.05 } })
    assert.are.equal("ok", r.verdict, tostring(r.reason))
    r = ev:evaluate((C:gsub("%%%%", "%%"):gsub("filter%[i %% 5%] %* ", "")), { timing = { budget = 0.05 } })
    assert.are.equal("wrong", r.verdict, tostring(r.reason))
    r = ev:evaluate((C:gsub("%%%%", "%%"):gsub("float filter%[5%]", "float filter[4]")), { timing = { budget = 0.05 } })
    assert.are.equal("launch_error", r.verdict)
    assert.matches("symbol 'filter' is 16 bytes in the module, the task declares 5 elements of f32 (20 bytes)", r.reason, 1, true)
    r = ev:evaluate((C:gsub("%%%%", "%%"):gsub("float filter%[5%]", "static float filter[5]")), { timing = { budget = 0.05 } })
    assert.are.equal("launch_error", r.verdict)
    assert.matches("symbol 'filter' not found in the candidate", r.reason, 1, true)
    ev:close()
  end)
end)
