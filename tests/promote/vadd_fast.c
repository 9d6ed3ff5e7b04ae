/* tests/promote/vadd_fast.c: a right candidate at every size (the compiler vectorizes it). */
void vadd(int N, const float *x, const float *y, float *z) {
  for (int i = 0; i < N; ++i) z[i] = x[i] + y[i];
}
