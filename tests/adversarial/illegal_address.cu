// expect: crashed
// Stores through a null pointer (held in a volatile, so the store is really issued).
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  float *volatile p = nullptr;
  p[threadIdx.x] = A[0];
}
