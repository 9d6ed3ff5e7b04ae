// kernels/gemm_ref.cu: the reference for gemm: same inputs, accumulated and stored in
// double precision, coalesced along columns so it stays quick at the bench size.
extern "C" __global__ void gemm_ref(int M, int N, int K, const float *A, const float *B, double *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    double acc = 0.0;
    for (int k = 0; k < K; ++k) acc += (double)A[(size_t)row * K + k] * (double)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
  }
}
