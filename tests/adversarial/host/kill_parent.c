/* expect: crashed */
/* Tries to kill the process that supervises it. */
#include <signal.h>
#include <unistd.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  kill(getppid(), SIGKILL);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
