// expect: launch_error
// Asks for 300 KB of shared memory per block; the H200 allows 227 KB.
// kloop: launch grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16}, smem = 300 * 1024
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  extern __shared__ float buf[];
  int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
  buf[threadIdx.y * 16 + threadIdx.x] = 0.0f;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc + buf[threadIdx.x];
  }
}
