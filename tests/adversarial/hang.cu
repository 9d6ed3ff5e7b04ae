// expect: timeout
// Never returns (the H200 has no watchdog: only killing the worker ends it).
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  volatile int spin = 1;
  while (spin) { }
}
