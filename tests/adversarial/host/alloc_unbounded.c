/* expect: crashed */
/* Allocates until memory runs out, then uses the null pointer malloc returns. */
#include <stdlib.h>
#include <string.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (;;) {
    char *p = malloc(1 << 28);
    if (!p) { ((volatile char *)p)[0] = 1; }
    memset(p, 1, 1 << 28);
  }
}
