-- tests/promote/vadd.lua: a host task for the promotion tests: z = x + y. Every declared
-- size is a multiple of 8, so a kernel unrolled by 8 without a remainder loop passes
-- the search and only a hidden size shows it wrong (tests/cli/promote.t).
return kloop.task {
  name = "vadd_promote", entry = "vadd",
  args = {
    { "N", "int" },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "z", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 262144 }, check = { { N = 1000 }, { N = 8 } },
    promote = { N = { max = 1048576 } } },
  reference = { source = "vadd_ref.c", entry = "vadd_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = s.N, bytes = 12 * s.N } end,
}
