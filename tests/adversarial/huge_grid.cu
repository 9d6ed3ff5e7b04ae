// expect: launch_error
// Its launch plan asks for a grid the hardware cannot schedule (y > 65535).
// kloop: launch grid = {1, 100000}, block = {32}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
