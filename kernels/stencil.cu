// kernels/stencil.cu: a 2-D five-point stencil that writes only the interior of `out`;
// the one-cell halo keeps its initial values (an inout buffer). Tunable block shape.
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
// kloop: launch grid = {cdiv(W, BX), cdiv(H, BY)}, block = {BX, BY}
extern "C" __global__ void stencil(int W, int H, const float *__restrict__ in, float *__restrict__ out) {
  int x = blockIdx.x * BX + threadIdx.x;
  int y = blockIdx.y * BY + threadIdx.y;
  if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;
  const float *c = in + (size_t)y * W + x;
  out[(size_t)y * W + x] = 0.5f * c[0] + 0.125f * (c[-1] + c[1] + c[-W] + c[W]);
}
