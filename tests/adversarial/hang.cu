// expect: timeout
// Never returns (the H200 has no watchdog: only killing the worker ends it). The loop
// reads volatile device memory, so the compiler cannot remove it.
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  const volatile float *p = A;
  while (p[0] == p[0]) { }
  C[0] = 0.0f;
}
