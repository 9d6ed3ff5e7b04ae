/* tests/promote/sum_check_drop.c: a wrong candidate of sum_check.lua: it drops the last
   element, which only the check function (there is no reference) can see. */
void sum(int N, const float *x, float *s) {
  double acc = 0;
  for (int i = 0; i < N - 1; ++i) acc += x[i];
  s[0] = (float)acc;
}
