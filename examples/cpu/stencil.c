/* examples/cpu/stencil.c: a 2-D five-point stencil on the CPU that writes only the
   interior of its output; the one-cell halo keeps whatever the buffer held (inout). */
void stencil(int W, int H, const float *in, float *out) {
  for (int y = 1; y < H - 1; ++y)
    for (int x = 1; x < W - 1; ++x) {
      const float *c = in + (long)y * W + x;
      out[(long)y * W + x] = 0.5f * c[0] + 0.125f * (c[-1] + c[1] + c[-W] + c[W]);
    }
}
