#!/bin/sh
# tests/unit/test_fill.sh KLOOP SRC_DIR: inputs drawn on the device (kloop_fill, CUDA source
# text in lua/kloop/eval/worker_client.lua's check_source) must have the bits of
# src/kl_buf.c's kl_buf_fill, or the device's inputs would not be the host truth the
# worker restores and checks against. The CUDA text is compiled here as host C (its
# rounding intrinsics as the plain operations they round like) and compared, element for
# element, on every dtype x distribution, with the pass through a narrower type that a
# reference's copy of an inout takes (kl_buf_convert); and its log and sin/cos are held to
# libm's within 4 ulp-ish bounds.
. "$(dirname "$0")/cuda_text.sh"
cuda_text check_source kl_fill kl_fill_value "$D/fill_cuda.inc"
cat > "$D/t.c" <<'C'
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kloop.h"
#define __device__
#define __forceinline__ static inline
#define __dadd_rn(a, b) ((a) + (b))
#define __dsub_rn(a, b) ((a) - (b))
#define __dmul_rn(a, b) ((a) * (b))
#define __ddiv_rn(a, b) ((a) / (b))
#define __dsqrt_rn(a) sqrt(a)
#define __double2float_rn(a) ((float)(a))
static long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }
static double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
#include "fill_cuda.inc"
static size_t size_of(int t) { return (t == 1 || t == 5) ? 8 : (t == 2 || t == 3) ? 2 : (t == 7 || t == 8) ? 1 : 4; }
int main(void) {
  const size_t n = 5003; /* odd, over several of kl_buf.c's chunks */
  const double dist_a[4] = {-1.5, 0.25, 3.0, -7.2}, dist_b[4] = {2.5, 1.75, 0, 300.9};
  int bad = 0, cases = 0;
  unsigned char *h = malloc(8 * n), *d = malloc(8 * n), *c = malloc(8 * n);
  for (int t = 0; t <= 8; t++)
    for (int dist = 0; dist <= 3; dist++)
      for (uint64_t seed = 1; seed <= 3; seed++) {
        double lo, span;
        uint64_t key;
        if (kl_buf_fill_args((kl_dist)dist, dist_a[dist], dist_b[dist], seed * 0x9E37ull, &lo, &span, &key) != KL_OK) {
          printf("FAIL: kl_buf_fill_args refused dist %d\n", dist);
          return 1;
        }
        if (kl_buf_fill(h, (kl_dtype)t, n, (kl_dist)dist, dist_a[dist], dist_b[dist], seed * 0x9E37ull) != KL_OK) {
          printf("FAIL: kl_buf_fill refused dtype %d dist %d\n", t, dist);
          return 1;
        }
        for (size_t i = 0; i < n; i++) kl_store(d, i, t, kl_fill_value(i, dist, dist_a[dist], dist_b[dist], lo, span, key));
        cases++;
        if (memcmp(h, d, n * size_of(t)) != 0) {
          size_t i = 0;
          while (memcmp(h + i * size_of(t), d + i * size_of(t), size_of(t)) == 0) i++;
          printf("FAIL: dtype %d dist %d seed %llu: element %zu differs\n", t, dist, (unsigned long long)seed, i);
          bad++;
        }
        /* through this dtype into f64 (an inout's reference copy): kl_buf_convert's result */
        if (kl_buf_convert(h, (kl_dtype)t, c, KL_F64, n) != KL_OK) { printf("FAIL: convert\n"); return 1; }
        for (size_t i = 0; i < n; i++)
          kl_store(d, i, 1, kl_round_to(kl_fill_value(i, dist, dist_a[dist], dist_b[dist], lo, span, key), t));
        cases++;
        if (memcmp(c, d, n * 8) != 0) {
          printf("FAIL: dtype %d dist %d seed %llu: the f64 copy differs\n", t, dist, (unsigned long long)seed);
          bad++;
        }
      }
  /* the arithmetic log and sine/cosine against libm */
  double worst_log = 0, worst_trig = 0;
  uint64_t x = 0x243F6A8885A308D3ull;
  for (int k = 0; k < 1000000; k++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    double u = ((double)(int64_t)(x >> 11) + 1.0) * 0x1.0p-53;
    double el = fabs(kl_log(u) - log(u)) / fmax(fabs(log(u)), 1e-300);
    if (el > worst_log) worst_log = el;
    double v = (double)(int64_t)(x >> 11) * 0x1.0p-53, sn, cs;
    kl_sincos_turn(v, &sn, &cs);
    double et = fmax(fabs(sn - sin(6.283185307179586 * v)), fabs(cs - cos(6.283185307179586 * v)));
    if (et > worst_trig) worst_trig = et;
  }
  if (worst_log > 1e-15 || worst_trig > 4e-15) {
    printf("FAIL: log off by %.3g (relative), sin/cos by %.3g\n", worst_log, worst_trig);
    return 1;
  }
  if (bad) { printf("FAIL: %d of %d fills differ between the kernel's text and kl_buf.c\n", bad, cases); return 1; }
  printf("PASS: the kernel's fills equal kl_buf.c's on %d fills of %zu elements; log within %.2g, sin/cos within %.2g of libm\n",
         cases, n, worst_log, worst_trig);
  return 0;
}
C
# the log's and sin/cos's constants, in order, literally the same on both sides (one ulp
# apart would rarely show in a fill, and the bits would then differ now and then)
nums() { sed 's#/\*[^*]*\*/##g' | grep -oE -- '-?[0-9]+\.[0-9]+(e-?[0-9]+)?'; }
sed -n '/^static double log_arith/,/^typedef struct fill_job/p' "$SRC/src/kl_buf.c" | nums > "$D/host.nums"
sed -n '/double kl_log(double x)/,/element i of a fill/p' "$D/fill_cuda.inc" | nums > "$D/dev.nums"
[ "$(wc -l < "$D/host.nums")" -gt 30 ] || { echo "FAIL: the host's log and sin/cos constants were not found"; exit 1; }
cmp -s "$D/host.nums" "$D/dev.nums" || { echo "FAIL: the log and sin/cos constants differ:"; diff "$D/host.nums" "$D/dev.nums"; exit 1; }
cc -O2 -std=c11 -ffp-contract=off -D_GNU_SOURCE -I"$SRC/src" -I"$D" "$D/t.c" "$SRC/src/kl_buf.c" "$SRC/src/kl_err.c" -lm -lpthread -o "$D/t"
"$D/t"
