// bench/candidates/naive32.cu: the naive baseline with 32x32 blocks (threadIdx.x along rows).
// kloop: launch grid = {cdiv(M, 32), cdiv(N, 32)}, block = {32, 32}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
