/* tests/strategies/ladder_ijk.c: the slow baseline of sgemm_naive.lua (i-j-k order, strided B). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += A[(long)i * K + k] * B[(long)k * N + j];
      C[(long)i * N + j] = acc;
    }
}
