/* expect: unwritten */
/* Does nothing. */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
}
