// bench/ladder/3_tiled_tuned.cu: ladder rung 3: the tiling the tune strategy found (128x256x16, 16x4).
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 4
#endif
// kloop: launch grid = {cdiv(N, BN), cdiv(M, BM)}, block = {(BN / TN) * (BM / TM)}
extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TN))
gemm(int M, int N, int K, const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C) {
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN];
  const int nthreads = (BM / TM) * (BN / TN);
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += nthreads) {
      int r = i / BK, c = i % BK;
      int gr = row0 + r, gc = k0 + c;
      As[c][r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
    }
    for (int i = tid; i < BK * BN; i += nthreads) {
      int r = i / BN, c = i % BN;
      int gr = k0 + r, gc = col0 + c;
      Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    int r = row0 + ty * TM + i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      int c = col0 + tx * TN + j;
      if (c < N) C[(size_t)r * N + c] = acc[i][j];
    }
  }
}
