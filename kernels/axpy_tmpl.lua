-- kernels/axpy_tmpl.lua: a C++ template kernel whose instance the tunables choose
-- (docs/TASKS.md, "C++ entry names"): entry = "axpy_t<ITEMS, BS>", found through NVRTC's
-- name expressions.
return kloop.task {
  name = "axpy_tmpl", entry = "axpy_t<ITEMS, BS>",
  args = {
    { "N", "int" }, { "a", "float", value = 1.5 },
    { "x", "const float*", size = "N", init = "uniform(-1,1)" },
    { "y0", "const float*", size = "N", init = "normal(0,1)" },
    { "y", "float*", size = "N", output = true },
  },
  sizes = { bench = { N = 67108864 }, check = { { N = 1000003 }, { N = 4097 }, { N = 1 } } },
  params = { ITEMS = { 1, 2, 4, 8 }, BS = { 256, 128, 512, 1024 } },
  launch = function(s) return { grid = { cdiv(s.N, s.BS * s.ITEMS) }, block = { s.BS } } end,
  reference = {
    source = "axpy_tmpl_ref.cu", entry = "axpy_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.N, 256) }, block = { 256 } } end,
  },
  tolerance = { rel = 1e-6 },
  cost = function(s) return { flops = 2 * s.N, bytes = 12 * s.N } end,
}
