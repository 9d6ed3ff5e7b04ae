// expect: crashed
// Dereferences a null pointer.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  float *p = nullptr;
  p[threadIdx.x] = A[0];
}
