// bench/candidates/stencil_bad_halo.cu: a stencil that clears the halo an inout buffer must keep: `kloop check kernels/stencil.cu --candidate` this file must say wrong.
// kloop: launch grid = {cdiv(W, 32), cdiv(H, 8)}, block = {32, 8}
extern "C" __global__ void stencil(int W, int H, const float *__restrict__ in, float *__restrict__ out) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 8 + threadIdx.y;
  if (x >= W || y >= H) return;
  if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) { out[(size_t)y * W + x] = 0.0f; return; }
  const float *c = in + (size_t)y * W + x;
  out[(size_t)y * W + x] = 0.5f * c[0] + 0.125f * (c[-1] + c[1] + c[-W] + c[W]);
}
