// kernels/haxpy.cu: y = a * x + y0 over half-precision buffers (issue 16, item 8: half
// buffers filled, poisoned and compared by kloop), computed in float and rounded once;
// ITEMS elements per thread (a -D parameter), BS threads per block.
#include <cuda_fp16.h>
extern "C" __global__ void haxpy(int n, float a, const __half *x, const __half *y0, __half *y) {
  int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    int i = base + k * blockDim.x;
    if (i < n) y[i] = __float2half(a * __half2float(x[i]) + __half2float(y0[i]));
  }
}
