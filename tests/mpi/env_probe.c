/* expect: crashed */
/* Says what a remote worker's environment holds, then crashes so its output reaches the
   driver's tail: PATH passes the allow-list, a variable of the rank's own does not. */
#include <stdio.h>
#include <stdlib.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  const char *s = getenv("KLOOP_MPI_TEST_SECRET");
  printf("probe: PATH %s, secret %s\n", getenv("PATH") ? "seen" : "unset", s ? s : "unset");
  fflush(stdout);
  *(volatile int *)0 = 0;
}
