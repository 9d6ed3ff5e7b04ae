-- kernels/gemm.lua: the sgemm task: C[M,N] = A[M,K] * B[K,N], float32, row-major.
return kloop.task {
  name = "sgemm",
  entry = "gemm",
  args = {
    { "M", "int" }, { "N", "int" }, { "K", "int" },
    { "A", "const float*", size = "M*K", init = "uniform(-1,1)" },
    { "B", "const float*", size = "K*N", init = "normal(0,1)" },
    { "C", "float*", size = "M*N", output = true },
  },
  sizes = {
    bench = { M = 4096, N = 4096, K = 4096 },
    -- not multiples of 16/32/128, a skinny one, and a tiny one
    check = { { M = 257, N = 383, K = 129 }, { M = 1000, N = 1024, K = 64 }, { M = 1, N = 7, K = 3 } },
  },
  -- the baseline maps threadIdx.x to rows (32x32 blocks: a warp reads 32 rows of A)
  launch = function(s) return { grid = { cdiv(s.M, 32), cdiv(s.N, 32) }, block = { 32, 32 } } end,
  reference = {
    source = "gemm_ref.cu", entry = "gemm_ref", precision = "f64",
    launch = function(s) return { grid = { cdiv(s.N, 32), cdiv(s.M, 8) }, block = { 32, 8 } } end,
  },
  tolerance = { rel = 1e-5 },
  cost = function(s)
    return { flops = 2 * s.M * s.N * s.K, bytes = 4 * (s.M * s.K + s.K * s.N + s.M * s.N) }
  end,
  -- the report's reference line: cuBLAS at the bench size (kloop.eval.library)
  library = { name = "cuBLAS sgemm", call = "sgemm", m = "M", n = "N", k = "K" },
}
