/* expect: wrong */
/* Remembers the output of the first call per output pointer and replays it. */
#include <string.h>
static const float *seen_c; static float saved[1 << 16]; static int saved_n;
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  if (seen_c == C && M * N == saved_n) { memcpy(C, saved, sizeof(float) * (size_t)saved_n); return; }
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (M * N <= (1 << 16)) { memcpy(saved, C, sizeof(float) * (size_t)(M * N)); saved_n = M * N; seen_c = C; }
}
