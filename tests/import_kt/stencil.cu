// stencil.cu: an import-kt example: a 2-D grid from two block sizes and a fixed y block.
extern "C" __global__ void blur(float *out, const float *in, int w, int h) {
  int x = blockIdx.x * block_size_x + threadIdx.x;
  int y = blockIdx.y * block_size_y + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = 0.5f * in[y * w + x];
}
