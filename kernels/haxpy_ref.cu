// kernels/haxpy_ref.cu: the float64 reference of haxpy.cu (same inputs, double output).
#include <cuda_fp16.h>
extern "C" __global__ void haxpy_ref(int n, float a, const __half *x, const __half *y0, double *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (double)a * (double)__half2float(x[i]) + (double)__half2float(y0[i]);
}
