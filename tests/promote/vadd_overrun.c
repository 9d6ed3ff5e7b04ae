/* tests/promote/vadd_overrun.c: right everywhere, but it reads x[N], one element past
   its input: the read lands in kloop's guard zone, so verification passes; only
   AddressSanitizer sees it. */
void vadd(int N, const float *x, const float *y, float *z) {
  for (int i = 0; i < N; ++i) z[i] = x[i] + y[i];
  (void)((volatile const float *)x)[N];
}
