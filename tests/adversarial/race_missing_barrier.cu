// expect: wrong nondeterministic nan
// Shared-memory tiling without the barriers: threads read tiles before they are loaded
// (stale shared memory, whatever ran before: finite garbage, or NaN bit patterns).
// kloop: launch grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  __shared__ float As[16][16], Bs[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += 16) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (col < N && t + ty < K) ? B[(t + ty) * N + col] : 0.0f;
    for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
