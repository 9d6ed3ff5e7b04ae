// expect: launch_error
// Its own launch plan asks for 2048 threads per block.
// kloop: launch grid = {cdiv(N, 2048), M}, block = {2048}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
