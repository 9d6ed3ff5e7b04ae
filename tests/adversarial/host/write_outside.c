/* expect: crashed */
/* Writes a file outside its directory. */
#include <stdio.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  FILE *f = fopen("/tmp/kloop_adversarial_escape", "w");
  if (f) { fputs("escaped", f); fclose(f); }
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
