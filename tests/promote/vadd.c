/* tests/promote/vadd.c: the task's baseline, slow on purpose (volatile temporaries keep
   the compiler from vectorizing), so a good candidate is provably faster. */
void vadd(int N, const float *x, const float *y, float *z) {
  for (int i = 0; i < N; ++i) {
    volatile float a = x[i], b = y[i];
    volatile float s = a + b;
    z[i] = s;
  }
}
