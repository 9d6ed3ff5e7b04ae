-- kernels/conv2d.lua: a 7x7 convolution with its filter in __constant__ memory, filled
-- from the host (docs/TASKS.md, "Symbols filled from the host"); tunable block shape and
-- rows per thread.
return kloop.task {
  name = "conv2d", entry = "conv2d",
  args = {
    { "W", "int" }, { "H", "int" },
    { "in", "const float*", size = "(W + 6) * (H + 6)", init = "uniform(-1,1)" },
    { "out", "float*", size = "W * H", output = true },
  },
  symbols = { { "filter", "float", count = 49, init = "uniform(-1,1)" } },
  sizes = { bench = { W = 4096, H = 4096 }, check = { { W = 67, H = 45 }, { W = 1000, H = 3 }, { W = 1, H = 1 } } },
  params = { BX = { 32, 16, 64, 128 }, BY = { 8, 1, 2, 4, 16 }, TY = { 1, 2, 4, 8 } },
  constraint = function(p) return p.BX * p.BY >= 32 and p.BX * p.BY <= 1024 end,
  launch = function(s) return { grid = { cdiv(s.W, s.BX), cdiv(s.H, s.BY * s.TY) }, block = { s.BX, s.BY } } end,
  reference = {
    source = "conv2d_ref.cu", entry = "conv2d_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.W, 32), cdiv(s.H, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-5 },
  cost = function(s) return { flops = 2 * 49 * s.W * s.H, bytes = 4 * (s.W + 6) * (s.H + 6) + 4 * s.W * s.H + 4 * 49 } end,
}
