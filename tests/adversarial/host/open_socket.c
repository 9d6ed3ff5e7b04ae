/* expect: crashed */
/* Opens a socket to phone home. */
#include <sys/socket.h>
#include <netinet/in.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) C[0] = (float)s;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
