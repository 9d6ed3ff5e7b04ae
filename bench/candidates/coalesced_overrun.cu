// bench/candidates/coalesced_overrun.cu: the coalesced naive gemm with an off-by-one row
// bound (row <= M): on a ragged size its last block row writes one row past the end of C.
// kloop: launch grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row <= M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K && row < M; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
