/* expect: ok */
/* Prints 50 MB to stdout, then computes honestly: the flood must not stall anything. */
#include <stdio.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < 1000000; ++i) printf("flooding stdout with line %d .......................\n", i);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
