-- examples/cpu/sgemm.lua: the sgemm task on the host backend (a C kernel, no GPU).
return kloop.task {
  name = "sgemm_cpu", entry = "sgemm",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = {
    bench = { M = 384, N = 384, K = 384 },
    check = { { M = 67, N = 45, K = 33 }, { M = 130, N = 257, K = 64 }, { M = 1, N = 7, K = 3 } },
  },
  reference = { source = "sgemm_ref.c", entry = "sgemm_ref", precision = "f64" },
  tolerance = { rel = 1e-5 },
  cost = function(s) return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end,
}
