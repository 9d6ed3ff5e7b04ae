/* bench/memory/tiny.c: a trivial host kernel with a large parameter space, so a tune
   run can evaluate thousands of distinct candidates quickly. */
#ifndef P1
#define P1 1
#endif
#ifndef P2
#define P2 1
#endif
#ifndef P3
#define P3 1
#endif
#ifndef P4
#define P4 1
#endif
#ifndef P5
#define P5 1
#endif
void tiny(int N, const float *x, float *y) {
  for (int i = 0; i < N; ++i) y[i] = x[i] * (float)(P1 + P2 + P3 + P4 + P5) / (float)(P1 + P2 + P3 + P4 + P5);
}
