/* examples/cpu/stencil_ref.c: the reference for stencil.c, in double; like the kernel it
   leaves the halo alone, so both start from and keep the same initial values there. */
void stencil_ref(int W, int H, const float *in, double *out) {
  for (int y = 1; y < H - 1; ++y)
    for (int x = 1; x < W - 1; ++x) {
      const float *c = in + (long)y * W + x;
      out[(long)y * W + x] = 0.5 * c[0] + 0.125 * ((double)c[-1] + c[1] + c[-W] + c[W]);
    }
}
