-- tests/strategies/sgemm_naive.lua: a host sgemm task whose baseline is the slow i-j-k
-- loop, so a scripted ladder of LLM replies has real improvements to find.
return kloop.task {
  name = "sgemm_naive_cpu", entry = "sgemm",
  kernel = "ladder_ijk.c",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = { bench = { M = 256, N = 256, K = 256 }, check = { { M = 67, N = 45, K = 33 }, { M = 1, N = 7, K = 3 } } },
  reference = { source = "../../examples/cpu/sgemm_ref.c", entry = "sgemm_ref", precision = "f64" },
  tolerance = { rel = 1e-5 },
  cost = function(s) return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) } end,
}
