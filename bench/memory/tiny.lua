-- bench/memory/tiny.lua: 7^5 = 16807 parameter points over a trivial kernel (memory bench).
return kloop.task {
  name = "tiny", entry = "tiny",
  args = { { "N", "int" }, { "x", "const float*", size = "N" }, { "y", "float*", size = "N", output = true } },
  sizes = { bench = { N = 4096 }, check = { { N = 17 } } },
  reference = { source = "tiny_ref.c", entry = "tiny_ref", precision = "f64" },
  tolerance = { rel = 1e-6 },
  params = { P1 = { 1, 2, 3, 4, 5, 6, 7 }, P2 = { 1, 2, 3, 4, 5, 6, 7 }, P3 = { 1, 2, 3, 4, 5, 6, 7 },
             P4 = { 1, 2, 3, 4, 5, 6, 7 }, P5 = { 1, 2, 3, 4, 5, 6, 7 } },
  options = { "-O1" },
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
