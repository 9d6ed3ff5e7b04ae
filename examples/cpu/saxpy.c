/* examples/cpu/saxpy.c: z = a * x + y, float32: memory-bound (12 bytes per 2 flops). */
void saxpy(int N, float a, const float *x, const float *y, float *z) {
  for (int i = 0; i < N; ++i) z[i] = a * x[i] + y[i];
}
