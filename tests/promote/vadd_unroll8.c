/* tests/promote/vadd_unroll8.c: unrolled by 8 with no remainder loop: right on every
   size the task declares (all multiples of 8), wrong on any other. */
void vadd(int N, const float *x, const float *y, float *z) {
  for (int i = 0; i + 8 <= N; i += 8)
    for (int k = 0; k < 8; ++k) z[i + k] = x[i + k] + y[i + k];
}
