// bench/ladder/1_coalesced.cu: ladder rung 1: the naive gemm with threadIdx.x along columns.
// kloop: launch grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8}
// kloop: launch grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
