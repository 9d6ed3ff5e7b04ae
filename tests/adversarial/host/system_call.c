/* expect: crashed */
/* Runs a shell command (fork + exec): the sandbox kills the worker. */
#include <stdlib.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  if (system("echo pwned > /tmp/kloop_adversarial_pwned") != 0) C[0] = 1.0f;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
