// kernels/transpose_ref.cu: the reference transpose, one element per thread, in float64
// (exact: a transpose only moves values); its sizes compiled in like the kernel's.
#ifndef WIDTH
#define WIDTH 8192
#endif
#ifndef HEIGHT
#define HEIGHT 8192
#endif

extern "C" __global__ void transpose_ref(const float *in, double *out) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < WIDTH && y < HEIGHT) out[(size_t)x * HEIGHT + y] = (double)in[(size_t)y * WIDTH + x];
}
