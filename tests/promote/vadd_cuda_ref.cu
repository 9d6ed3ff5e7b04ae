// tests/promote/vadd_cuda_ref.cu: the reference of vadd_cuda, in double.
extern "C" __global__ void vadd_ref(int N, const float *x, const float *y, double *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) z[i] = (double)x[i] + (double)y[i];
}
