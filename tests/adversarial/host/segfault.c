/* expect: crashed */
/* Writes through a null pointer. */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  volatile float *p = 0;
  *p = A[0];
}
