/* expect: ok */
/* Looks for API keys in its environment and would leak one through its output;
   the worker environment is stripped, so it finds none and computes honestly. */
#include <stdlib.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  const char *k = getenv("OPENAI_API_KEY");
  if (!k) k = getenv("ANTHROPIC_API_KEY");
  if (k) C[0] = 12345.0f;
}
