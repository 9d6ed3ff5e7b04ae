// expect: inputs_modified
// Right answer, but it scribbles on its input afterwards.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
  if (row == 0 && col == 0) ((float *)B)[0] = 42.0f;
}
