-- tests/adversarial/host/sgemm_small.lua: the host sgemm task, small, with deadlines
-- derived from the work (no fixed deadline), for the host adversarial suite.
return kloop.task {
  name = "sgemm_host_small", entry = "sgemm",
  kernel = "../../../examples/cpu/sgemm.c",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = { bench = { M = 128, N = 128, K = 128 }, check = { { M = 67, N = 45, K = 33 }, { M = 1, N = 7, K = 3 } } },
  reference = { source = "../../../examples/cpu/sgemm_ref.c", entry = "sgemm_ref", precision = "f64" },
  tolerance = { rel = 1e-5 },
  cost = function(s) return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end,
}
