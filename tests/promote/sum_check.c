/* tests/promote/sum_check.c: the baseline of sum_check.lua: the sum, accumulated in
   double so it is far inside the check's tolerance. */
void sum(int N, const float *x, float *s) {
  double acc = 0;
  for (int i = 0; i < N; ++i) acc += x[i];
  s[0] = (float)acc;
}
