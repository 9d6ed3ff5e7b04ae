-- tests/store/slow/slow.lua: a tunable host task whose point D=3 spins past its deadline,
-- so a test can kill kloop while that candidate's evaluation is in flight.
return kloop.task {
  name = "slow_cpu", entry = "slow",
  args = { { "N", "int" }, { "x", "const float*", size = "N" }, { "y", "float*", size = "N", output = true } },
  sizes = { bench = { N = 1024 }, check = { { N = 17 } } },
  reference = { source = "slow_ref.c", entry = "slow_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  params = { D = { 1, 2, 3, 4, 5, 6 } },
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
  deadline = 5,
}
