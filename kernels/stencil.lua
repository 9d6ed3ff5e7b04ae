-- kernels/stencil.lua: a memory-bound 2-D stencil with an inout output whose halo the
-- kernel never writes; tunable block shape (BX, BY), the kernel's own launch comment.
return kloop.task {
  name = "stencil", entry = "stencil",
  args = {
    { "W", "int" }, { "H", "int" },
    { "in", "const float*", size = "W*H", init = "uniform(-1,1)" },
    { "out", "float*", size = "W*H", inout = true, init = "uniform(5,6)" },
  },
  sizes = { bench = { W = 8192, H = 8192 }, check = { { W = 67, H = 45 }, { W = 1000, H = 3 }, { W = 3, H = 3 } } },
  launch = function(s) return { grid = { cdiv(s.W, 32), cdiv(s.H, 8) }, block = { 32, 8 } } end,
  reference = {
    source = "stencil_ref.cu", entry = "stencil_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.W, 32), cdiv(s.H, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-6 },
  params = { BX = { 8, 16, 32, 64, 128 }, BY = { 1, 2, 4, 8, 16 } },
  constraint = function(p) return p.BX * p.BY >= 32 and p.BX * p.BY <= 1024 end,
  cost = function(s) return { flops = 6 * s.W * s.H, bytes = 8 * s.W * s.H } end,
}
