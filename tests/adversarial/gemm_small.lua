-- tests/adversarial/gemm_small.lua: the gemm task at a small bench size, so the
-- adversarial suite runs in seconds; kernel and reference are the shipped ones.
return kloop.task {
  name = "sgemm_small", entry = "gemm",
  kernel = "../../kernels/gemm.cu",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = {
    bench = { M = 1024, N = 1024, K = 1024 },
    check = { { M = 257, N = 383, K = 129 }, { M = 1, N = 7, K = 3 } },
  },
  launch = function(s) return { grid = { cdiv(s.M, 16), cdiv(s.N, 16) }, block = { 16, 16 } } end,
  reference = {
    source = "../../kernels/gemm_ref.cu", entry = "gemm_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.N, 32), cdiv(s.M, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-5 },
  cost = function(s) return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end,
}
