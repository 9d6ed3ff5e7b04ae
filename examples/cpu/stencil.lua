-- examples/cpu/stencil.lua: a host task with an inout output: the kernel writes the
-- interior, the halo keeps its initial values (drawn like an input), and every element
-- is compared with a float64 reference that starts from the same values.
return kloop.task {
  name = "stencil_cpu", entry = "stencil",
  args = {
    { "W", "int" }, { "H", "int" },
    { "in", "const float*", size = "W*H", init = "uniform(-1,1)" },
    { "out", "float*", size = "W*H", inout = true, init = "uniform(5,6)" },
  },
  sizes = { bench = { W = 2048, H = 2048 }, check = { { W = 67, H = 45 }, { W = 3, H = 3 } } },
  reference = { source = "stencil_ref.c", entry = "stencil_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = 6 * s.W * s.H, bytes = 8 * s.W * s.H } end,
}
