/* bench/memory/tiny_ref.c: the reference for tiny, in double. */
void tiny_ref(int N, const float *x, double *y) {
  for (int i = 0; i < N; ++i) y[i] = x[i];
}
