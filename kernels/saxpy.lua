-- kernels/saxpy.lua: out = a * x + y, float32: a memory-bound task (2 FLOPs per 12 bytes).
return kloop.task {
  name = "saxpy",
  entry = "saxpy",
  args = {
    { "N", "int" },
    { "a", "float", value = 1.5 },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "out", "float*", size = "N", output = true },
  },
  sizes = {
    -- 2^26 floats: 768 MB moved, far beyond the 60 MB L2
    bench = { N = 67108864 },
    check = { { N = 1000003 }, { N = 1 }, { N = 4097 } },
  },
  launch = function(s) return { grid = { cdiv(s.N, 256) }, block = { 256 } } end,
  reference = { source = "saxpy_ref.cu", entry = "saxpy_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = 2 * s.N, bytes = 12 * s.N } end,
}
