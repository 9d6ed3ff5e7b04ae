// expect: crashed wrong
// Allocates from the device heap in every thread until it runs dry, then writes
// through the null pointer malloc returns.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  float *p = (float *)malloc(1 << 20);
  p[0] = 1.0f;
  if (row < M && col < N) C[row * N + col] = p[0];
}
