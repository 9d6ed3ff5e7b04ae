// expect: out_of_bounds
// The commonest GPU bug: an off-by-one row bound (row <= M), so on a ragged size the
// last block writes one row past the end of C, into whatever allocation lies next.
// Nothing faults; before guard zones it passed and corrupted later verdicts.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row <= M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K && row < M; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
