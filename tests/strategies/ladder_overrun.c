/* tests/strategies/ladder_overrun.c: a fast "proposal" with the commonest bug: four rows
   of C at a time and no remainder loop, so on a ragged size it writes up to three rows
   past the end of C (into whatever lies next to it). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; i += 4) {
    float *c0 = C + (long)i * N, *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;
    for (int j = 0; j < N; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float *b = B + (long)k * N;
      /* reads past A's end on the ragged rows stay inside A's allocation slack here */
      const float a0 = A[(long)i * K + k];
      const float a1 = i + 1 < M ? A[(long)(i + 1) * K + k] : 0.0f;
      const float a2 = i + 2 < M ? A[(long)(i + 2) * K + k] : 0.0f;
      const float a3 = i + 3 < M ? A[(long)(i + 3) * K + k] : 0.0f;
      for (int j = 0; j < N; ++j) {
        c0[j] += a0 * b[j]; c1[j] += a1 * b[j]; c2[j] += a2 * b[j]; c3[j] += a3 * b[j];
      }
    }
  }
}
