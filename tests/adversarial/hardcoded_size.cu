// expect: wrong
// Tuned for the benchmark size only: K is taken as 1024 whatever the call says.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    const int KK = 1024;
    for (int k = 0; k < KK && k < K + 8; ++k) acc += A[row * K + k % K] * B[(k % K) * N + col];
    C[row * N + col] = acc;
  }
}
