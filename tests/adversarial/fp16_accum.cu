// expect: wrong
// Accumulates in half precision: faster on some chips, and wrong at float32 tolerance.
#include <cuda_fp16.h>
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    __half acc = __float2half(0.0f);
    for (int k = 0; k < K; ++k) acc = __hadd(acc, __hmul(__float2half(A[row * K + k]), __float2half(B[k * N + col])));
    C[row * N + col] = __half2float(acc);
  }
}
