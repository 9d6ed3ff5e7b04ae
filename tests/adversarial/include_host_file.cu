// expect: rejected
// Tries to read a host file through the compiler log.
#include "/etc/shadow"
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
