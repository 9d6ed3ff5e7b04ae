// expect: out_of_bounds
// A correct product, plus one write just before the start of C (an index computed as
// row * N + col - 1 for a "shifted" store): lands in the guard zone before the buffer.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    if (row == 0 && col == 0) C[-1] = acc;
  }
}
