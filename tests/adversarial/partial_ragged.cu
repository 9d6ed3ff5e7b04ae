// expect: unwritten
// Only whole 16x16 tiles are computed: the ragged edge of 257x383 is left alone.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if ((blockIdx.x + 1) * 16 > M || (blockIdx.y + 1) * 16 > N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
