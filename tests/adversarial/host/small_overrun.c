/* expect: out_of_bounds */
/* The off-by-one row bound (i <= M): a correct product plus one row written past the end
   of C, into whatever the allocator put next. Nothing faults; before guard zones it was
   judged ok and the row landed in the worker's own state. */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i <= M; ++i) {
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K && i < M; ++k) acc += A[(long)i * K + k] * B[(long)k * N + j];
      C[(long)i * N + j] = acc;
    }
  }
}
