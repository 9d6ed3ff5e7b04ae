/* tests/report/broken.c: a reply that does not compile (a missing semicolon and an undeclared name). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; i++)
    C[i] = undeclared_value
}
