/* tests/strategies/ladder_fast.c: a faster "proposal": four rows of C at a time, so
   each row of B is loaded once per four rows (remainder rows one by one). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int i = 0;
  for (; i + 4 <= M; i += 4) {
    float *c0 = C + (long)i * N, *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;
    for (int j = 0; j < N; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float *b = B + (long)k * N;
      const float a0 = A[(long)i * K + k], a1 = A[(long)(i + 1) * K + k];
      const float a2 = A[(long)(i + 2) * K + k], a3 = A[(long)(i + 3) * K + k];
      for (int j = 0; j < N; ++j) {
        c0[j] += a0 * b[j]; c1[j] += a1 * b[j]; c2[j] += a2 * b[j]; c3[j] += a3 * b[j];
      }
    }
  }
  for (; i < M; ++i) {
    float *c = C + (long)i * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) c[j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
