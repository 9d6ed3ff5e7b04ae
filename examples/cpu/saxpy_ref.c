/* examples/cpu/saxpy_ref.c: the reference for saxpy, in double. */
void saxpy_ref(int N, float a, const float *x, const float *y, double *z) {
  for (int i = 0; i < N; ++i) z[i] = (double)a * x[i] + (double)y[i];
}
