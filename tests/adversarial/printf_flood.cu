// expect: wrong
// Prints from every thread (megabytes on the worker's stdout) and gets the sum wrong;
// the flood must not confuse the protocol or stall the worker.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  printf("thread %d %d says hello, and hello again, and again\n", row, col);
  if (row < M && col < N) C[row * N + col] = 1.0f;
}
