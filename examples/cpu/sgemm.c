/* examples/cpu/sgemm.c: float32 row-major C = A * B on the CPU, the i-k-j loop order
   (streams rows of B and C, so the compiler vectorizes the inner loop). */
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int i = 0; i < M; ++i) {
    float *c = C + (long)i * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float a = A[(long)i * K + k];
      const float *b = B + (long)k * N;
      for (int j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
}
