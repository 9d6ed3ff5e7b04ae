// expect: out_of_bounds crashed
// A correct product, plus writes every 64 KiB over the 24 MiB after C: past any guard
// zone, into the neighbouring allocations (kloop's input originals, other sizes'
// buffers) or unmapped memory (an illegal address). Either way the candidate gets its
// verdict and the next one is judged on intact state.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
  if (row == 0 && col < 384) C[(size_t)M * N + (size_t)col * 16384 + 7] = 0.0f;
}
