/* expect: out_of_bounds crashed */
/* A correct product, plus a sweep of writes every 64 KiB from 8 MiB before C to 8 MiB
   after it: past any guard zone, into the neighbouring allocations (kloop's input
   originals, other sizes' buffers), the worker's own memory, or unmapped pages (a
   segfault). Either way the candidate gets its verdict and the next one is judged on
   intact state (the worker's state is checked against host truth, or it restarts). */
#include <stdint.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += A[(long)i * K + k] * B[(long)k * N + j];
      C[(long)i * N + j] = acc;
    }
  volatile char *c = (volatile char *)C;
  long n = (long)M * N * 4;
  for (long off = 1L << 16; off <= (8L << 20); off += 1L << 16) {
    c[n + off] = 1;
    c[-off] = 1;
  }
}
