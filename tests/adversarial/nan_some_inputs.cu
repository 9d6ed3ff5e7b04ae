// expect: nan
// Right on uniform inputs; produces NaN when an input exceeds 3 (normal inputs do).
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      float b = B[k * N + col];
      acc += A[row * K + k] * (b > 3.0f ? sqrtf(-b) : b);
    }
    C[row * N + col] = acc;
  }
}
