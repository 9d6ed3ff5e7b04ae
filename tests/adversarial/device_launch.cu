// expect: compile_error
// Launches a kernel from the device, which needs -rdc; kloop never passes it.
__global__ void child(float *C) { C[threadIdx.x] = 0.0f; }
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  child<<<1, 32>>>(C);
}
