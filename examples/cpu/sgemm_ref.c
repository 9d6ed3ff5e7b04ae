/* examples/cpu/sgemm_ref.c: the reference for sgemm, accumulated and stored in double. */
void sgemm_ref(int M, int N, int K, const float *A, const float *B, double *C) {
  for (int i = 0; i < M; ++i) {
    double *c = C + (long)i * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0;
    for (int k = 0; k < K; ++k) {
      const double a = A[(long)i * K + k];
      const float *b = B + (long)k * N;
      for (int j = 0; j < N; ++j) c[j] += a * (double)b[j];
    }
  }
}
