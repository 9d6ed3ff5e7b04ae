/* expect: wrong */
/* Unrolled by 8 with no remainder loop: right at the bench size (K = 128), wrong on
   the check sizes (K = 33, K = 3). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k + 8 <= K; k += 8)
      for (int u = 0; u < 8; ++u)
        for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k + u] * B[(long)(k + u) * N + j];
  }
}
