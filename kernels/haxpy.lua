-- kernels/haxpy.lua: a memory-bound axpy over half-precision buffers (docs/TASKS.md,
-- "Element types"): kloop fills x and y0 as halves, poisons y, and compares it with a
-- float64 reference within half's default tolerance (16x its roundoff).
return kloop.task {
  name = "haxpy", entry = "haxpy",
  args = {
    { "N", "int" }, { "a", "float", value = 1.5 },
    { "x", "const __half*", size = "N", init = "uniform(-1,1)" },
    { "y0", "const __half*", size = "N", init = "normal(0,1)" },
    { "y", "__half*", size = "N", output = true },
  },
  sizes = { bench = { N = 67108864 }, check = { { N = 1000003 }, { N = 4097 }, { N = 1 } } },
  params = { ITEMS = { 1, 2, 4, 8 }, BS = { 256, 128, 512, 1024 } },
  launch = function(s) return { grid = { cdiv(s.N, s.BS * s.ITEMS) }, block = { s.BS } } end,
  reference = {
    source = "haxpy_ref.cu", entry = "haxpy_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.N, 256) }, block = { 256 } } end,
  },
  cost = function(s) return { flops = 2 * s.N, bytes = 6 * s.N } end,
}
