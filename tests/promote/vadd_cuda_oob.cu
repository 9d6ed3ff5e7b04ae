// tests/promote/vadd_cuda_oob.cu: right, but the last thread reads x[N], one element past
// the input. The read lands in kloop's guard zone, so verification passes; memcheck
// sees it once the worker runs without guard zones (spec.guards = false).
extern "C" __global__ void vadd(int N, const float *x, const float *y, float *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    z[i] = x[i] + y[i];
    (void)((volatile const float *)x)[i + 1];
  }
}
