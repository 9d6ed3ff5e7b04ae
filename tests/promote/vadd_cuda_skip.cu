// tests/promote/vadd_cuda_skip.cu: z = x + y except every 1000th element, which keeps
// y's value: wrong on a few elements only, which vadd_cuda_check.lua's check names.
extern "C" __global__ void vadd(int N, const float *x, const float *y, float *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) z[i] = (i % 1000 == 999) ? y[i] : x[i] + y[i];
}
