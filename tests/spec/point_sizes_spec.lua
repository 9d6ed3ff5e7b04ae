-- tests/spec/point_sizes_spec.lua: sizes that depend on the point (issue 16 item 2's
-- rest): a scratch buffer of NB partial sums, NB a tunable, allocated (guarded) per
-- candidate at its own point, and scalar values of the candidate's point; on the sim
-- evaluator (tests/spec/support/sim_evaluator.lua). Other buffers may not change size.
local taskmod = require("kloop.eval.task")
local util = require("kloop.util")
local simev = require("tests.spec.support.sim_evaluator")

local dir = os.tmpname()
os.remove(dir)
assert(util.mkdir_p(dir))
local function write(name, text) assert(util.write_file(dir .. "/" .. name, text)) return dir .. "/" .. name end

local HEAD = [[
local ffi = require("ffi")
local function ptr(p, i, ct) return ffi.cast(ct, ffi.cast("uint64_t*", p[i])[0]) end
]]
-- a two-stage sum: partial[b] sums every nb-th element from b, out[0] sums the partials
local function kernel(stage1, stage2, name, otype)
  return HEAD .. string.format([[
-- extern "C" __global__ void %s(const float *x, float *partial, %s *out, int n, int nb);
return { %s = function(p)
  local x, partial, out = ptr(p, 0, "float*"), ptr(p, 1, "%s*"), ptr(p, 2, "%s*")
  local n, nb = ffi.cast("int32_t*", p[3])[0], ffi.cast("int32_t*", p[4])[0]
%s
%s
end }
]], name or "rsum", otype or "float", name or "rsum", otype or "float", otype or "float", stage1, stage2)
end
local STAGE1 = [[
  for b = 0, nb - 1 do
    local acc = 0
    for i = b, n - 1, nb do acc = acc + x[i] end
    partial[b] = acc
  end]]
local STAGE2 = [[
  local t = 0
  for b = 0, nb - 1 do t = t + partial[b] end
  out[0] = t]]
local RIGHT = kernel(STAGE1, STAGE2)
write("rsum_ref.sim", kernel(STAGE1, STAGE2, "rsum_ref", "double"))
write("rsum.sim", RIGHT)

local SIDE = [[
return kloop.task {
  name = "rsum", entry = "rsum", kernel = "rsum.sim",
  params = { NB = { 4, 8, 16 } },
  args = { { "x", "const float*", size = "N", init = "uniform(0,1)" }, { "partial", "float*", size = "NB", %s },
    { "out", "float*", size = 1, output = true }, { "n", "int", value = "N" }, { "nb", "int", value = "NB" } },
  sizes = { bench = { N = 512 }, check = { { N = 37 }, { N = 3 } } },
  launch = function(s) return { grid = { s.NB }, block = { 1 } } end,
  reference = { source = "rsum_ref.sim", entry = "rsum_ref", precision = "f64" },
  flush_cache = false,
  cost = function(s) return { flops = s.N, bytes = 4 * s.N + 4 * s.NB } end,
}
]]

describe("a scratch buffer sized by a tunable", function()
  local task = assert(simev.load_task(write("rsum.lua", SIDE:format("scratch = true"))))

  it("loads as scratch: poisoned, guarded, never compared, no init", function()
    assert.are.equal("scratch", task.args[2].role)
    assert.is_nil(task.args[2].dists)
    local _, err = taskmod.load(write("rsum.lua", SIDE:format('scratch = true, init = "uniform(0,1)"')))
    assert.matches("args[2].init: a scratch buffer is not filled (kloop poisons it before every launch) (fix: remove init)", err, 1, true)
    -- an output sized by the tunable could not be compared with the reference's
    _, err = taskmod.load(write("rsum.lua", (SIDE:format("output = true"):gsub("  reference = %b{},\n", ""))))
    assert.matches("args[2].size: partial has 8 elements at NB = 8, 4 elements at the default point: only a scratch buffer "
      .. "may change size with a parameter (fix: judge it by a check function and mark it scratch = true", err, 1, true)
  end)

  it("gives every point its own scratch size and scalar values, guarded", function()
    local ev = simev.new(task)
    for _, nb in ipairs({ 4, 8, 16 }) do
      local r = ev:evaluate(RIGHT, { defines = { NB = nb }, timing = { budget = 0 } })
      assert.are.equal("ok", r.verdict, r.reason)
    end
    -- one element past its own 8 partial sums is out of bounds at NB = 8 (the buffer is
    -- its own, not the reference point's 4 inside a larger allocation)
    local r = ev:evaluate(kernel(STAGE1 .. "\n  partial[nb] = 1", STAGE2), { defines = { NB = 8 } })
    assert.are.equal("out_of_bounds", r.verdict)
    assert.matches("after partial (check1, 8 elements at this candidate's point)", r.reason, 1, true)
    -- a kernel that reads its scratch before writing it meets the poison (a NaN whose
    -- payload survives the sum: the output reads as never written)
    r = ev:evaluate(kernel("", STAGE2), { defines = { NB = 8 } })
    assert.are.equal("unwritten", r.verdict)
    -- an A/B between two points: each side its own scratch and values
    local c = ev:compare(RIGHT, RIGHT, { defines_a = { NB = 4 }, defines_b = { NB = 16 }, timing = { budget = 0 } })
    assert.are.equal("ok", c.a.verdict, c.a.reason)
    assert.are.equal("ok", c.b.verdict, c.b.reason)
    -- and back at the reference point, the worker's own buffers serve again
    assert.are.equal("ok", ev:evaluate(RIGHT, { timing = { budget = 0 } }).verdict)
    ev:close()
  end)

  it("runs a reference of two kernels, each by its own entry", function()
    local ref2 = HEAD .. [[
-- extern "C" __global__ void rsum_ref(const float *x, double *partial, double *out, int n, int nb);
local function args(p)
  return ptr(p, 0, "float*"), ptr(p, 1, "double*"), ptr(p, 2, "double*"), ffi.cast("int32_t*", p[3])[0], ffi.cast("int32_t*", p[4])[0]
end
return {
  rsum_ref = function(p) local x, partial, _, n, nb = args(p)
    for b = 0, nb - 1 do local acc = 0; for i = b, n - 1, nb do acc = acc + x[i] end; partial[b] = acc end end,
  rsum_ref_final = function(p) local _, partial, out, _, nb = args(p)
    local t = 0; for b = 0, nb - 1 do t = t + partial[b] end; out[0] = t end,
}
]]
    write("rsum_ref2.sim", ref2)
    local side = SIDE:format("scratch = true"):gsub('reference = %b{}', [[reference = { source = "rsum_ref2.sim", entry = "rsum_ref",
    precision = "f64",
    launch = function(s) return { { grid = { 1 } , block = { 1 } }, { entry = "rsum_ref_final", grid = { 1 }, block = { 1 } } } end }]])
    local t2 = assert(simev.load_task(write("rsum2.lua", side)))
    local ev = simev.new(t2)
    local r = ev:evaluate(RIGHT, { defines = { NB = 8 }, timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    ev:close()
  end)

  it("sends only what differs at the point", function()
    local ev = simev.new(task)
    assert.are.same({}, assert(ev:point_args(RIGHT, nil)))
    local d = assert(ev:point_args(RIGHT, { NB = 16 }))
    assert.are.same({ ["2"] = { count = 16 }, ["5"] = { value = 16 } }, d.check1)
    ev:close()
  end)
end)
