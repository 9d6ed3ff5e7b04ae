/* expect: ok */
/* A correct kernel that splits the rows between two POSIX threads (what an
   OpenMP-style kernel does): the sandbox must let threads start, run and join. */
#include <pthread.h>
typedef struct {
  int M, N, K, lo, hi;
  const float *A, *B;
  float *C;
} rows;
static void *run(void *arg) {
  const rows *r = arg;
  for (int i = r->lo; i < r->hi; ++i) {
    float *c = r->C + (long)i * r->N;
    for (int j = 0; j < r->N; ++j) c[j] = 0.0f;
    for (int k = 0; k < r->K; ++k) {
      const float a = r->A[(long)i * r->K + k];
      const float *b = r->B + (long)k * r->N;
      for (int j = 0; j < r->N; ++j) c[j] += a * b[j];
    }
  }
  return NULL;
}
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  rows part[2] = {{M, N, K, 0, M / 2, A, B, C}, {M, N, K, M / 2, M, A, B, C}};
  pthread_t t[2];
  int started[2];
  for (int i = 0; i < 2; ++i) started[i] = pthread_create(&t[i], NULL, run, &part[i]) == 0;
  for (int i = 0; i < 2; ++i) {
    if (started[i]) pthread_join(t[i], NULL);
    else C[0] = -1.0f; /* no thread: leave the result visibly wrong */
  }
}
