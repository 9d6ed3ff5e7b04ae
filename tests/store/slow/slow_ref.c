/* tests/store/slow/slow_ref.c: the reference for slow, in double. */
void slow_ref(int N, const float *x, double *y) {
  for (int i = 0; i < N; ++i) y[i] = 2.0 * (double)x[i];
}
