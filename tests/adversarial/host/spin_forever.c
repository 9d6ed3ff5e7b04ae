/* expect: timeout */
/* Never returns. */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  volatile int spin = 1;
  while (spin) { }
}
