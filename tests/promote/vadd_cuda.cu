// tests/promote/vadd_cuda.cu: z = x + y, one element per thread.
extern "C" __global__ void vadd(int N, const float *x, const float *y, float *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) z[i] = x[i] + y[i];
}
