/* examples/cpu/sgemm_blocked.c: float32 row-major C = A * B with cache blocking.
   Tunable: TI x TJ blocks of C, TK-deep panels (passed as -D by the tune proposer). */
#ifndef TI
#define TI 32
#endif
#ifndef TJ
#define TJ 64
#endif
#ifndef TK
#define TK 64
#endif
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (long i = 0; i < (long)M * N; ++i) C[i] = 0.0f;
  for (int i0 = 0; i0 < M; i0 += TI)
    for (int k0 = 0; k0 < K; k0 += TK)
      for (int j0 = 0; j0 < N; j0 += TJ) {
        int i1 = i0 + TI < M ? i0 + TI : M, k1 = k0 + TK < K ? k0 + TK : K, j1 = j0 + TJ < N ? j0 + TJ : N;
        for (int i = i0; i < i1; ++i)
          for (int k = k0; k < k1; ++k) {
            const float a = A[(long)i * K + k];
            const float *b = B + (long)k * N;
            float *c = C + (long)i * N;
            for (int j = j0; j < j1; ++j) c[j] += a * b[j];
          }
      }
}
