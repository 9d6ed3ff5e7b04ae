-- examples/cpu/saxpy.lua: a memory-bound host task: z = a * x + y.
return kloop.task {
  name = "saxpy_cpu", entry = "saxpy",
  args = {
    { "N", "int" }, { "a", "float", value = 2.5 },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "z", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 4194304 }, check = { { N = 1000003 }, { N = 17 }, { N = 1 } } },
  reference = { source = "saxpy_ref.c", entry = "saxpy_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  flush_cache = true,
  cost = function(s) return { flops = 2 * s.N, bytes = 12 * s.N } end,
}
