-- tests/spec/support/saxpy_small.lua: examples/cpu/saxpy.c at a small bench size, so a
-- host A/B comparison takes a fraction of a second (tests/spec/ab_spec.lua).
return kloop.task {
  name = "saxpy_small", entry = "saxpy", kernel = "../../../examples/cpu/saxpy.c",
  args = {
    { "N", "int" }, { "a", "float", value = 2.5 },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y", "const float*", size = "N", init = "normal(0,1)" },
    { "z", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 65536 }, check = { { N = 1000 }, { N = 1 } } },
  reference = { source = "../../../examples/cpu/saxpy_ref.c", entry = "saxpy_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  flush_cache = false,
  cost = function(s) return { flops = 2 * s.N, bytes = 12 * s.N } end,
}
