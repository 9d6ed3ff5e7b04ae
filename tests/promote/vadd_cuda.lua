-- tests/promote/vadd_cuda.lua: the CUDA task of tests/gpu/promote.lua: z = x + y. Its two
-- candidates pass verification and only compute-sanitizer refuses them.
return kloop.task {
  name = "vadd_cuda_promote", entry = "vadd",
  args = {
    { "N", "int" },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "z", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 16777216 }, check = { { N = 1000003 }, { N = 4097 }, { N = 1 } } },
  launch = function(s) return { grid = { cdiv(s.N, 256) }, block = { 256 } } end,
  reference = { source = "vadd_cuda_ref.cu", entry = "vadd_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = s.N, bytes = 12 * s.N } end,
}
