// expect: rejected
// Reaches for a host file through a computed include.
#define HOSTFILE "/etc/hostname"
#include HOSTFILE
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
