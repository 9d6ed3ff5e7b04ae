-- kernels/transpose.lua: a tiled matrix transpose whose WIDTH and HEIGHT are compiled in
-- (docs/TASKS.md, "Sizes compiled in"): the kernel takes no size arguments, so every
-- size gets its own binary (-DWIDTH=... -DHEIGHT=...), cached. Tunable tile size (TILE;
-- 0 is the naive baseline) and rows per thread (ROWS).
return kloop.task {
  name = "transpose", entry = "transpose",
  args = {
    { "in", "const float*", size = "WIDTH * HEIGHT", init = "uniform(-1,1)" },
    { "out", "float*", size = "WIDTH * HEIGHT", output = true },
  },
  sizes = {
    bench = { WIDTH = 8192, HEIGHT = 8192 },
    check = { { WIDTH = 1000, HEIGHT = 37 }, { WIDTH = 33, HEIGHT = 1 }, { WIDTH = 1, HEIGHT = 513 },
      { WIDTH = 257, HEIGHT = 383 } },
  },
  sizes_as_defines = { "WIDTH", "HEIGHT" },
  params = { TILE = { 0, 16, 32, 64 }, ROWS = { 1, 2, 4, 8 } },
  constraint = function(p)
    if p.TILE == 0 then return p.ROWS == 1 end
    return p.TILE % p.ROWS == 0 and p.TILE * p.TILE / p.ROWS >= 32 and p.TILE * p.TILE / p.ROWS <= 1024
  end,
  launch = function(s)
    if s.TILE == 0 then return { grid = { cdiv(s.WIDTH, 32), cdiv(s.HEIGHT, 8) }, block = { 32, 8 } } end
    return { grid = { cdiv(s.WIDTH, s.TILE), cdiv(s.HEIGHT, s.TILE) }, block = { s.TILE, s.TILE / s.ROWS } }
  end,
  reference = {
    source = "transpose_ref.cu", entry = "transpose_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.WIDTH, 32), cdiv(s.HEIGHT, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = 0, bytes = 8 * s.WIDTH * s.HEIGHT } end,
}
