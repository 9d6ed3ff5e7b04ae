-- kernels/reduce.lua: a two-stage float sum (docs/TASKS.md, "Element types" and "Sizes
-- that depend on the point"): the partial sums are a scratch buffer of NB floats, NB a
-- tunable; the loads are float or float4 (VEC), the element type a function of the point.
local vec = function(p) return p.VEC == 4 and "float4" or "float" end
return kloop.task {
  name = "reduce", entry = "reduce_partial",
  args = {
    { "x", "const vec_t*", size = "N / VEC", type = vec, init = "uniform(0,1)" },
    { "partial", "float*", size = "NB", scratch = true },
    { "out", "float*", size = 1, output = true },
    { "n", "int", value = "N / VEC" },
  },
  -- N is a multiple of 4 (float4 loads); 2^25 floats: 128 MB, beyond the L2
  sizes = { bench = { N = 33554432 }, check = { { N = 1000004 }, { N = 4004 }, { N = 4 } },
    promote = { N = { multiple_of = 4, max = 2 ^ 26 } } },
  params = { BS = { 256, 128, 512, 1024 }, NB = { 256, 64, 128, 512, 1024, 2048 }, VEC = { 1, 4 } },
  launch = function(s)
    return { { grid = { s.NB }, block = { s.BS } }, { entry = "reduce_final", grid = { 1 }, block = { s.BS } } }
  end,
  reference = {
    source = "reduce_ref.cu", entry = "reduce_ref", precision = "f64",
    launch = function(s)
      return { { grid = { s.NB }, block = { 256 } }, { entry = "reduce_ref_final", grid = { 1 }, block = { 256 } } }
    end,
  },
  -- a float sum of up to 2^25 uniform(0,1) terms against the float64 one
  tolerance = { rel = 1e-5 },
  -- beside the reference: on the check sizes, the float64 sum kloop's own host copy of
  -- x gives (c.input reads a float4 buffer lane by lane)
  check = function(c)
    if c.sizes.N > 1100000 then return true end
    local x, out = c.input("x"), c.output("out")
    local want = 0
    for i = 0, #x - 1 do want = want + x[i] end
    if math.abs(out[0] - want) > 1e-5 * math.max(1, math.abs(want)) then
      return false, string.format("out = %.9g, the float64 sum of x is %.9g", out[0], want)
    end
    return true
  end,
  cost = function(s) return { flops = s.N, bytes = 4 * s.N + 4 } end,
}
