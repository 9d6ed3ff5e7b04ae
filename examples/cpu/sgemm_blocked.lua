-- examples/cpu/sgemm_blocked.lua: a tunable host sgemm (cache blocking), for the tune
-- strategy without a GPU: kloop strategies/tune.lua examples/cpu/sgemm_blocked.c
return kloop.task {
  name = "sgemm_blocked_cpu", entry = "sgemm",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = {
    bench = { M = 256, N = 256, K = 256 },
    check = { { M = 67, N = 45, K = 33 }, { M = 1, N = 7, K = 3 } },
  },
  reference = { source = "sgemm_ref.c", entry = "sgemm_ref", precision = "f64" },
  tolerance = { rel = 1e-5 },
  params = { TI = { 8, 16, 32, 64 }, TJ = { 32, 64, 128, 256 }, TK = { 16, 32, 64, 128 } },
  cost = function(s) return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end,
}
