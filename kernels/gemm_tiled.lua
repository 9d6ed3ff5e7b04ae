-- kernels/gemm_tiled.lua: the sgemm task with the tunable tiled kernel (BM, BN, BK,
-- TM, TN as -D defines); the kernel's own launch comment sizes the grid from them.
return kloop.task {
  name = "sgemm_tiled",
  entry = "gemm",
  kernel = "gemm_tiled.cu",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = {
    bench = { M = 4096, N = 4096, K = 4096 },
    check = { { M = 257, N = 383, K = 129 }, { M = 1000, N = 1024, K = 64 }, { M = 1, N = 7, K = 3 } },
  },
  -- used only when a candidate has no launch comment of its own (defaults BM = BN = 64, TM = TN = 4)
  launch = function(s) return { grid = { cdiv(s.N, 64), cdiv(s.M, 64) }, block = { 256 } } end,
  reference = {
    source = "gemm_ref.cu", entry = "gemm_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.N, 32), cdiv(s.M, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-5 },
  params = { BM = { 32, 64, 128, 256 }, BN = { 32, 64, 128, 256 }, BK = { 8, 16, 32 }, TM = { 2, 4, 8, 16 }, TN = { 2, 4, 8 } },
  -- threads per block in [32, 1024], shared memory under 48 KB, a register tile that fits
  constraint = function(p)
    local threads = (p.BM / p.TM) * (p.BN / p.TN)
    local smem = 4 * (p.BK * (p.BM + 4) + p.BK * p.BN)
    return threads >= 32 and threads <= 1024 and smem <= 48 * 1024 and p.TM * p.TN <= 128
  end,
  cost = function(s)
    return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) }
  end,
  -- the report's reference line: cuBLAS at the bench size (kloop.eval.library)
  library = { name = "cuBLAS sgemm", call = "sgemm", m = "M", n = "N", k = "K" },
}
