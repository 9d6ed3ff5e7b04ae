/* tests/promote/vadd_ref.c: the reference of vadd, in double. */
void vadd_ref(int N, const float *x, const float *y, double *z) {
  for (int i = 0; i < N; ++i) z[i] = (double)x[i] + (double)y[i];
}
