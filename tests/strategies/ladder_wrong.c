/* tests/strategies/ladder_wrong.c: a "proposal" that skips the last k (wrong). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k + 1 < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
