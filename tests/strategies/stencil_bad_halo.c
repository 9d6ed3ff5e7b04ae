/* tests/strategies/stencil_bad_halo.c: a stencil that overwrites the halo it should leave alone (inout). */
void stencil(int W, int H, const float *in, float *out) {
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      long i = (long)y * W + x;
      int edge = x == 0 || y == 0 || x == W - 1 || y == H - 1;
      out[i] = edge ? 0.0f : 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - W] + in[i + W]);
    }
}
