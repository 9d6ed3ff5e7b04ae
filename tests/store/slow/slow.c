/* tests/store/slow/slow.c: y = 2x; with -DD=3 it first spins for minutes (a candidate
   whose evaluation is still running when the test kills kloop). */
#ifndef D
#define D 1
#endif
void slow(int N, const float *x, float *y) {
#if D == 3
  for (volatile unsigned long s = 0; s < 1000000000000UL; ++s) {
  }
#endif
  for (int i = 0; i < N; ++i) y[i] = 2.0f * x[i];
}
