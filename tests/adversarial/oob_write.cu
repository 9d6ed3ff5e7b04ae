// expect: crashed
// Writes far past the end of C: an illegal address that kills the CUDA context.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) C[(size_t)row * N + col + ((size_t)1 << 40)] = 1.0f;
}
