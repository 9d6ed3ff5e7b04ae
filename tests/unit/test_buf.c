/* test_buf.c: unit tests for the host-buffer helpers (fill, poison, hash, compare, convert). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kloop.h"

#include "kl_check.h"

static uint16_t to_half(double d) {
  uint16_t h = 0;
  kl_buf_convert(&d, KL_F64, &h, KL_F16, 1);
  return h;
}
static uint16_t to_bf16(double d) {
  uint16_t h = 0;
  kl_buf_convert(&d, KL_F64, &h, KL_BF16, 1);
  return h;
}
static double from_half(uint16_t h) {
  double d = 0;
  kl_buf_convert(&h, KL_F16, &d, KL_F64, 1);
  return d;
}

static void test_sizes(void) {
  CHECK(kl_dtype_size(KL_F32) == 4, "F32");
  CHECK(kl_dtype_size(KL_F64) == 8, "F64");
  CHECK(kl_dtype_size(KL_F16) == 2, "F16");
  CHECK(kl_dtype_size(KL_BF16) == 2, "BF16");
  CHECK(kl_dtype_size(KL_I32) == 4, "I32");
  CHECK(kl_dtype_size(KL_I64) == 8, "I64");
  CHECK(kl_dtype_size(KL_U32) == 4, "U32");
  CHECK(kl_dtype_size(KL_U8) == 1, "U8");
  CHECK(kl_dtype_size(KL_I8) == 1, "I8");
  CHECK(kl_dtype_size((kl_dtype)42) == 0, "bad dtype");
}

static void test_half(void) {
  /* clang-format off */
  static const struct { double v; uint16_t h; } cases[] = {
    {1.0, 0x3C00}, {-2.0, 0xC000}, {65504.0, 0x7BFF}, {0.0, 0x0000}, {-0.0, 0x8000},
    {0.5, 0x3800}, {65519.0, 0x7BFF},       /* just below the round-up point */
    {65520.0, 0x7C00},                      /* tie at max: rounds to even = inf */
    {1e6, 0x7C00}, {-1e6, 0xFC00},
    {1.0 + 0x1p-11, 0x3C00},                /* tie, even stays */
    {1.0 + 3 * 0x1p-11, 0x3C02},            /* tie, odd rounds up */
    {1.0 + 0x1p-11 + 0x1p-30, 0x3C01},      /* just above tie */
    {0x1p-24, 0x0001},                      /* smallest subnormal */
    {0x1p-25, 0x0000},                      /* tie with zero: even */
    {1.5 * 0x1p-25, 0x0001},
    {0x1p-14, 0x0400},                      /* smallest normal */
    {0x1p-14 - 0x1p-25, 0x0400},            /* subnormal rounding up into the normals */
    {0.1, 0x2E66}, {3.14159265358979, 0x4248},
  };
  /* clang-format on */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t h = to_half(cases[i].v);
    CHECK(h == cases[i].h, "half(%.17g) = 0x%04X, want 0x%04X", cases[i].v, h, cases[i].h);
  }
  uint16_t hn = to_half(NAN);
  CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0, "half(NaN) = 0x%04X", hn);
  CHECK(to_half(INFINITY) == 0x7C00, "half(inf)");

  /* Round trip every finite half through double. */
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7C00) == 0x7C00) continue;
    if (to_half(from_half((uint16_t)h)) != h) bad++;
  }
  CHECK(bad == 0, "%d halves fail the round trip", bad);
  CHECK(from_half(0x7BFF) == 65504.0, "from_half(0x7BFF) = %g", from_half(0x7BFF));
  CHECK(from_half(0x0001) == 0x1p-24, "from_half(0x0001)");
  CHECK(isnan(from_half(0x7E5A)), "from_half(0x7E5A) not NaN");

  /* clang-format off */
  static const struct { double v; uint16_t h; } bcases[] = {
    {1.0, 0x3F80}, {-2.0, 0xC000}, {3.14159265358979, 0x4049},
    {1.0 + 0x1p-8, 0x3F80},      /* tie, even stays */
    {1.0 + 3 * 0x1p-8, 0x3F82},  /* tie, odd rounds up */
    {3.4e38, 0x7F80},            /* above bf16 max (0x7F7F = 3.3895e38) after rounding */
    {0x1p-133, 0x0001},          /* smallest bf16 subnormal */
  };
  /* clang-format on */
  for (size_t i = 0; i < sizeof bcases / sizeof bcases[0]; i++) {
    uint16_t h = to_bf16(bcases[i].v);
    CHECK(h == bcases[i].h, "bf16(%.17g) = 0x%04X, want 0x%04X", bcases[i].v, h, bcases[i].h);
  }

  /* F64 -> F16 must not double-round through float: this value rounds down in float
     to exactly the half tie 1+2^-11, which would then go to even (0x3C00). */
  double tricky = 1.0 + 0x1p-11 + 0x1p-40;
  CHECK(to_half(tricky) == 0x3C01, "no-double-rounding up case: 0x%04X", to_half(tricky));
}

static int is_nan32(uint32_t w) {
  float f;
  memcpy(&f, &w, 4);
  return isnan(f);
}

static void test_poison(void) {
  uint32_t w32 = kl_poison_word(KL_F32);
  CHECK(is_nan32(w32), "F32 poison 0x%08X not NaN", w32);

  uint32_t w64 = kl_poison_word(KL_F64);
  uint64_t b64 = ((uint64_t)w64 << 32) | w64;
  double d;
  memcpy(&d, &b64, 8);
  CHECK(isnan(d), "F64 poison 0x%016llX not NaN", (unsigned long long)b64);

  uint32_t wh = kl_poison_word(KL_F16);
  CHECK(isnan(from_half((uint16_t)wh)) && isnan(from_half((uint16_t)(wh >> 16))), "F16 poison 0x%08X", wh);

  uint32_t wb = kl_poison_word(KL_BF16);
  CHECK(is_nan32((wb & 0xFFFF) << 16) && is_nan32(wb & 0xFFFF0000u), "BF16 poison 0x%08X", wb);

  uint32_t wi = kl_poison_word(KL_I32);
  CHECK(wi != 0 && wi != 0xFFFFFFFFu, "int poison 0x%08X looks like a common value", wi);

  /* Poison repeats little-endian over any length, tail bytes included. */
  unsigned char buf[23];
  memset(buf, 0, sizeof buf);
  kl_buf_poison(buf, 11, 0x44332211u);
  static const unsigned char want[11] = {0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33};
  CHECK(memcmp(buf, want, 11) == 0 && buf[11] == 0, "poison bytes wrong");

  /* Large buffer: every F32 element holds the word. */
  size_t n = 1000003;
  uint32_t *p = malloc(n * 4);
  kl_buf_poison(p, n * 4, w32);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += p[i] != w32;
  CHECK(wrong == 0, "%zu words not poisoned", wrong);
  free(p);
}

static void test_fill(void) {
  size_t n = 1 << 20;
  float *a = malloc(n * 4), *b = malloc(n * 4);
  CHECK(kl_buf_fill(a, KL_F32, n, KL_DIST_UNIFORM, -1, 1, 42) == KL_OK, "fill ok");
  kl_buf_fill(b, KL_F32, n, KL_DIST_UNIFORM, -1, 1, 42);
  CHECK(memcmp(a, b, n * 4) == 0, "fill not deterministic");
  CHECK(kl_buf_first_diff(a, b, KL_F32, n) == -1, "first_diff of equal buffers");
  kl_buf_fill(b, KL_F32, n, KL_DIST_UNIFORM, -1, 1, 43);
  size_t same = 0;
  for (size_t i = 0; i < n; i++) same += a[i] == b[i];
  CHECK(same < n / 1000, "seeds 42 and 43 agree on %zu elements", same);

  /* A prefix fill gives the same prefix: values depend on (seed, index) only. */
  kl_buf_fill(b, KL_F32, 1001, KL_DIST_UNIFORM, -1, 1, 42);
  CHECK(memcmp(a, b, 1001 * 4) == 0, "prefix fill differs");

  double sum = 0, sum2 = 0, mn = 1e9, mx = -1e9;
  for (size_t i = 0; i < n; i++) {
    sum += a[i];
    sum2 += (double)a[i] * a[i];
    if (a[i] < mn) mn = a[i];
    if (a[i] > mx) mx = a[i];
  }
  double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  CHECK(fabs(mean) < 0.01, "uniform mean %g", mean);
  CHECK(fabs(sd - 1 / sqrt(3.0)) < 0.01, "uniform sd %g", sd);
  CHECK(mn >= -1 && mx < 1 && mn < -0.999 && mx > 0.999, "uniform range [%g, %g]", mn, mx);

  double *g = malloc(n * 8);
  kl_buf_fill(g, KL_F64, n, KL_DIST_NORMAL, 3, 2, 7);
  sum = sum2 = 0;
  size_t beyond3 = 0;
  for (size_t i = 0; i < n; i++) {
    sum += g[i];
    sum2 += g[i] * g[i];
    beyond3 += fabs(g[i] - 3) > 6;
  }
  mean = sum / n;
  sd = sqrt(sum2 / n - mean * mean);
  /* Box-Muller pairs must be independent: adjacent elements uncorrelated. */
  double cov = 0;
  for (size_t i = 0; i + 1 < n; i += 2) cov += (g[i] - mean) * (g[i + 1] - mean);
  double corr = cov / (n / 2) / (sd * sd);
  CHECK(fabs(corr) < 0.01, "normal pair correlation %g", corr);
  CHECK(fabs(mean - 3) < 0.02, "normal mean %g", mean);
  CHECK(fabs(sd - 2) < 0.02, "normal sd %g", sd);
  /* P(|z|>3) = 0.0027 */
  CHECK(beyond3 > n * 0.002 && beyond3 < n * 0.0035, "normal tail count %zu", beyond3);

  /* Odd n: last element exists and matches the longer fill. */
  double g5[5];
  kl_buf_fill(g5, KL_F64, 5, KL_DIST_NORMAL, 3, 2, 7);
  CHECK(memcmp(g5, g, sizeof g5) == 0, "normal prefix differs");

  int32_t *iv = malloc(n * 4);
  kl_buf_fill(iv, KL_I32, n, KL_DIST_INT, -3, 3, 1);
  int hist[7] = {0}, out_of_range = 0;
  for (size_t i = 0; i < n; i++) {
    if (iv[i] < -3 || iv[i] > 3) out_of_range++;
    else hist[iv[i] + 3]++;
  }
  CHECK(out_of_range == 0, "%d ints outside [-3,3]", out_of_range);
  for (int k = 0; k < 7; k++)
    CHECK(fabs(hist[k] - n / 7.0) < n / 7.0 * 0.03, "int bucket %d has %d", k - 3, hist[k]);

  uint8_t u8[300];
  kl_buf_fill(u8, KL_U8, 300, KL_DIST_INT, 0, 255, 5);
  int seen_hi = 0;
  for (int i = 0; i < 300; i++) seen_hi |= u8[i] > 200;
  CHECK(seen_hi, "U8 int fill never above 200");

  uint16_t h[9];
  kl_buf_fill(h, KL_F16, 9, KL_DIST_CONST, 1.0, 0, 0);
  for (int i = 0; i < 9; i++) CHECK(h[i] == 0x3C00, "const half [%d] = 0x%04X", i, h[i]);
  kl_buf_fill(h, KL_BF16, 9, KL_DIST_CONST, -2.0, 0, 0);
  for (int i = 0; i < 9; i++) CHECK(h[i] == 0xC000, "const bf16 [%d] = 0x%04X", i, h[i]);

  /* bf16 fill equals f32 fill rounded to bf16. */
  uint16_t hb[1000];
  kl_buf_fill(hb, KL_BF16, 1000, KL_DIST_UNIFORM, -1, 1, 42);
  int mism = 0;
  for (int i = 0; i < 1000; i++) mism += hb[i] != to_bf16(a[i]);
  CHECK(mism == 0, "%d bf16 fill values differ from rounded f32", mism);

  CHECK(kl_buf_fill(a, (kl_dtype)99, 4, KL_DIST_UNIFORM, 0, 1, 1) == KL_EINVAL, "bad dtype");
  CHECK(kl_buf_fill(a, KL_F32, 4, (kl_dist)99, 0, 1, 1) == KL_EINVAL, "bad dist");
  CHECK(kl_buf_fill(iv, KL_I32, 4, KL_DIST_INT, 3, 2, 1) == KL_EINVAL, "empty int range");
  free(a);
  free(b);
  free(g);
  free(iv);
}

static void test_hash(void) {
  unsigned char buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 7 + 3);
  uint64_t h = kl_buf_hash(buf, 1000);
  CHECK(h == kl_buf_hash(buf, 1000), "hash not deterministic");
  CHECK(h != kl_buf_hash(buf, 999), "length not hashed");
  CHECK(kl_buf_hash(buf, 0) != kl_buf_hash(buf, 1), "empty vs one byte");
  /* Every single-bit flip at several positions (head, lanes, tails) changes the hash. */
  int same = 0;
  size_t lens[] = {1, 3, 7, 8, 13, 31, 32, 33, 100, 1000};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    size_t L = lens[li];
    uint64_t base = kl_buf_hash(buf, L);
    for (size_t pos = 0; pos < L; pos++)
      for (int bit = 0; bit < 8; bit++) {
        buf[pos] ^= (unsigned char)(1 << bit);
        same += kl_buf_hash(buf, L) == base;
        buf[pos] ^= (unsigned char)(1 << bit);
      }
  }
  CHECK(same == 0, "%d bit flips left the hash unchanged", same);
  /* Unaligned input hashes by content. */
  unsigned char copy[1001];
  memcpy(copy + 1, buf, 1000);
  CHECK(kl_buf_hash(copy + 1, 1000) == h, "hash depends on alignment");
}

static void test_compare(void) {
  kl_cmp c;
  float ref[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out[8];
  memcpy(out, ref, sizeof out);
  CHECK(kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0, kl_poison_word(KL_F32), 1, &c) == KL_OK, "ok");
  CHECK(c.n == 8 && c.n_bad == 0 && c.n_unwritten == 0 && c.n_nonfinite == 0, "exact: bad %zu", c.n_bad);
  CHECK(c.first_bad == -1 && c.first_unwritten == -1 && c.first_nonfinite == -1, "exact firsts");
  CHECK(c.max_abs_err == 0 && c.err_norm == 0, "exact err");
  CHECK(fabs(c.ref_norm - sqrt(204.0)) < 1e-12, "ref_norm %g", c.ref_norm);
  CHECK(c.ref_max_abs == 8, "ref_max_abs %g", c.ref_max_abs);

  /* Tolerance boundary: |err| == atol + rtol*|ref| passes, just above fails. */
  out[3] = 4.5f; /* err 0.5 == 0.25 + 0.0625*4, all exact in binary */
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0.25, 0.0625, 0, 0, &c);
  CHECK(c.n_bad == 0, "atol+rtol boundary: bad %zu", c.n_bad);
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0.25, 0.0624, 0, 0, &c);
  CHECK(c.n_bad == 1 && c.first_bad == 3, "just below atol+rtol: bad %zu", c.n_bad);
  out[3] = 4.0f;
  out[2] = 3.5f;
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0.5, 0, 0, 0, &c);
  CHECK(c.n_bad == 0, "err 0.5 with atol 0.5 counted bad");
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0.4999, 0, 0, 0, &c);
  CHECK(c.n_bad == 1 && c.first_bad == 2, "err 0.5 with atol 0.4999: bad %zu first %lld", c.n_bad,
        (long long)c.first_bad);
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0.17, 0, 0, &c);
  CHECK(c.n_bad == 0, "rtol above boundary counted bad");
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0.16, 0, 0, &c);
  CHECK(c.n_bad == 1, "rtol below boundary not counted");
  CHECK(c.max_abs_err == 0.5 && c.worst_index == 2 && c.worst_out == 3.5 && c.worst_ref == 3,
        "worst: %g at %lld (%g vs %g)", c.max_abs_err, (long long)c.worst_index, c.worst_out, c.worst_ref);
  out[6] = 6.0f; /* err 1: new worst */
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0.1, 0, 0, 0, &c);
  CHECK(c.n_bad == 2 && c.first_bad == 2 && c.worst_index == 6 && c.max_abs_err == 1, "two bad");
  CHECK(fabs(c.err_norm - sqrt(1.25)) < 1e-12, "err_norm %g", c.err_norm);

  /* Poison: unwritten elements are counted apart and not as errors. */
  memcpy(out, ref, sizeof out);
  uint32_t pw = kl_poison_word(KL_F32);
  memcpy(&out[3], &pw, 4);
  memcpy(&out[5], &pw, 4);
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0, pw, 1, &c);
  CHECK(c.n_unwritten == 2 && c.first_unwritten == 3, "unwritten %zu first %lld", c.n_unwritten,
        (long long)c.first_unwritten);
  CHECK(c.n_nonfinite == 0 && c.n_bad == 0, "poison counted as error");
  CHECK(fabs(c.ref_norm - sqrt(204.0)) < 1e-12, "ref_norm skips unwritten");
  /* Without check_poison the same NaNs are non-finite. */
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0, pw, 0, &c);
  CHECK(c.n_unwritten == 0 && c.n_nonfinite == 2 && c.first_nonfinite == 3, "no check: nonfinite %zu",
        c.n_nonfinite);
  /* A NaN with another payload is a real NaN, not poison. */
  out[3] = NAN;
  kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0, pw, 1, &c);
  CHECK(c.n_unwritten == 1 && c.first_unwritten == 5 && c.n_nonfinite == 1 && c.first_nonfinite == 3,
        "real NaN vs poison: unwritten %zu nonfinite %zu", c.n_unwritten, c.n_nonfinite);

  /* Non-finite matching: NaN vs NaN and same-sign inf are fine; others are not. */
  float r2[5] = {NAN, INFINITY, -INFINITY, INFINITY, 1};
  float o2[5] = {NAN, INFINITY, -INFINITY, -INFINITY, INFINITY};
  kl_buf_compare(o2, KL_F32, r2, KL_F32, 5, 0, 0, 0, 0, &c);
  CHECK(c.n_nonfinite == 2 && c.first_nonfinite == 3, "nonfinite %zu first %lld", c.n_nonfinite,
        (long long)c.first_nonfinite);
  CHECK(c.ref_norm == 0 + 1 && c.ref_max_abs == 1, "ref_norm over finite ref only: %g", c.ref_norm);
  o2[4] = 1;
  o2[0] = 5;
  kl_buf_compare(o2, KL_F32, r2, KL_F32, 5, 0, 0, 0, 0, &c);
  CHECK(c.n_nonfinite == 2 && c.first_nonfinite == 0, "finite out vs NaN ref is nonfinite");

  /* Half output, f32 reference, poisoned half buffer: both 16-bit halves of the word match. */
  uint16_t ho[6];
  kl_buf_poison(ho, sizeof ho, kl_poison_word(KL_F16));
  ho[1] = 0x3C00; /* 1.0 */
  ho[4] = 0x4000; /* 2.0 */
  float r3[6] = {0, 1, 0, 0, 2.001f, 0};
  kl_buf_compare(ho, KL_F16, r3, KL_F32, 6, 0.01, 0, kl_poison_word(KL_F16), 1, &c);
  CHECK(c.n_unwritten == 4 && c.first_unwritten == 0 && c.n_bad == 0 && c.n_nonfinite == 0,
        "half poison: unwritten %zu bad %zu", c.n_unwritten, c.n_bad);
  /* An asymmetric word: odd elements take the high half, even ones the low half. */
  kl_buf_poison(ho, sizeof ho, 0x7E117E22u);
  CHECK(ho[0] == 0x7E22 && ho[1] == 0x7E11, "half poison layout 0x%04X 0x%04X", ho[0], ho[1]);
  ho[2] = 0x7E11; /* high pattern at an even slot: a NaN that is not the poison there */
  kl_buf_compare(ho, KL_F16, r3, KL_F32, 6, 0.01, 0, 0x7E117E22u, 1, &c);
  CHECK(c.n_unwritten == 5 && c.n_nonfinite == 1 && c.first_nonfinite == 2, "half parity: unw %zu nf %zu",
        c.n_unwritten, c.n_nonfinite);

  /* F64 poison and U8 poison cycling through the word's bytes. */
  double d[3] = {1, 2, 3}, dr[3] = {1, 2, 3};
  kl_buf_poison(&d[1], 8, kl_poison_word(KL_F64));
  kl_buf_compare(d, KL_F64, dr, KL_F64, 3, 0, 0, kl_poison_word(KL_F64), 1, &c);
  CHECK(c.n_unwritten == 1 && c.first_unwritten == 1 && c.n_bad == 0, "f64 poison");
  uint8_t u[8], ur[8] = {0};
  kl_buf_poison(u, 8, 0xDEADBEEFu);
  u[6] = 0; /* written */
  kl_buf_compare(u, KL_U8, ur, KL_U8, 8, 0, 0, 0xDEADBEEFu, 1, &c);
  CHECK(c.n_unwritten == 7 && c.n_bad == 0, "u8 poison unwritten %zu", c.n_unwritten);

  /* Empty and invalid. */
  CHECK(kl_buf_compare(out, KL_F32, ref, KL_F32, 0, 0, 0, 0, 0, &c) == KL_OK && c.n == 0 &&
          c.worst_index == -1,
        "empty compare");
  CHECK(kl_buf_compare(out, (kl_dtype)77, ref, KL_F32, 8, 0, 0, 0, 0, &c) == KL_EINVAL, "bad dtype");
  CHECK(kl_buf_compare(out, KL_F32, ref, KL_F32, 8, 0, 0, 0, 0, NULL) == KL_EINVAL, "NULL res");
}

static void test_first_diff(void) {
  size_t n = 100000;
  int32_t *a = malloc(n * 4), *b = malloc(n * 4);
  kl_buf_fill(a, KL_I32, n, KL_DIST_INT, -1000, 1000, 3);
  memcpy(b, a, n * 4);
  CHECK(kl_buf_first_diff(a, b, KL_I32, n) == -1, "identical");
  b[77777] ^= 0x100;
  CHECK(kl_buf_first_diff(a, b, KL_I32, n) == 77777, "diff at %lld",
        (long long)kl_buf_first_diff(a, b, KL_I32, n));
  b[5000] ^= INT32_MIN; /* top bit */
  CHECK(kl_buf_first_diff(a, b, KL_I32, n) == 5000, "earlier diff");
  CHECK(kl_buf_first_diff(a, b, KL_I32, 5000) == -1, "diff beyond n ignored");
  /* Byte offset maps to the element: byte 4*5000+3 of I32 is element 5000; of U8 it is the byte. */
  CHECK(kl_buf_first_diff(a, b, KL_U8, n * 4) == 5000 * 4 + 3, "u8 index %lld",
        (long long)kl_buf_first_diff(a, b, KL_U8, n * 4));
  CHECK(kl_buf_first_diff(a, b, KL_F64, n / 2) == 2500, "f64 index");
  /* -0.0 and 0.0 are equal as numbers but differ in bits. */
  float z[2] = {0.0f, 1.0f}, nz[2] = {-0.0f, 1.0f};
  CHECK(kl_buf_first_diff(z, nz, KL_F32, 2) == 0, "signed zero");
  free(a);
  free(b);
}

static void test_convert(void) {
  float f[6] = {1.5f, -2.7f, 1e10f, -1e10f, NAN, 255.9f};
  int32_t i32[6];
  CHECK(kl_buf_convert(f, KL_F32, i32, KL_I32, 6) == KL_OK, "convert ok");
  CHECK(i32[0] == 1 && i32[1] == -2 && i32[2] == INT32_MAX && i32[3] == INT32_MIN && i32[4] == 0 &&
          i32[5] == 255,
        "f32->i32: %d %d %d %d %d %d", i32[0], i32[1], i32[2], i32[3], i32[4], i32[5]);
  uint8_t u8[6];
  kl_buf_convert(f, KL_F32, u8, KL_U8, 6);
  CHECK(u8[0] == 1 && u8[1] == 0 && u8[2] == 255 && u8[5] == 255, "f32->u8");
  int64_t big[2] = {INT64_C(9007199254740993), -5};
  int64_t big2[2];
  uint32_t u32[2];
  kl_buf_convert(big, KL_I64, big2, KL_I64, 2);
  CHECK(big2[0] == big[0], "i64 copy");
  kl_buf_convert(big, KL_I64, u32, KL_U32, 2);
  CHECK(u32[0] == UINT32_MAX && u32[1] == 0, "i64->u32 saturates");
  int8_t i8[2];
  int32_t src[2] = {-1000, 100};
  kl_buf_convert(src, KL_I32, i8, KL_I8, 2);
  CHECK(i8[0] == -128 && i8[1] == 100, "i32->i8");
  double d[3] = {1.0, 65504.0, 1.0 / 3};
  uint16_t h[3];
  float back[3];
  kl_buf_convert(d, KL_F64, h, KL_F16, 3);
  kl_buf_convert(h, KL_F16, back, KL_F32, 3);
  CHECK(back[0] == 1.0f && back[1] == 65504.0f && fabsf(back[2] - 1.0f / 3) < 1e-3f, "half round trip");
  uint16_t bh[3];
  kl_buf_convert(h, KL_F16, bh, KL_BF16, 3);
  CHECK(bh[0] == 0x3F80, "f16->bf16 0x%04X", bh[0]);
  CHECK(kl_buf_convert(d, (kl_dtype)50, h, KL_F16, 3) == KL_EINVAL, "bad src dtype");
  CHECK(kl_buf_convert(d, KL_F64, h, (kl_dtype)50, 3) == KL_EINVAL, "bad dst dtype");
  /* Converting a long buffer crosses chunk boundaries. */
  size_t n = 5000;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  double *xd = malloc(n * 8);
  kl_buf_fill(x, KL_F32, n, KL_DIST_NORMAL, 0, 1, 9);
  kl_buf_convert(x, KL_F32, xd, KL_F64, n);
  kl_buf_convert(xd, KL_F64, y, KL_F32, n);
  CHECK(kl_buf_first_diff(x, y, KL_F32, n) == -1, "f32->f64->f32 not exact");
  free(x);
  free(y);
  free(xd);
}

/* A comparison large enough to run in parts (on several threads) gives what one pass
   over the whole buffer gives: the global firsts, the counts, the worst element (the
   earliest of equal ones), the norms. */
static void test_compare_parts(void) {
  size_t n = (5u << 20) + 3; /* six parts, the last short */
  float *out = malloc(n * sizeof *out);
  double *ref = malloc(n * sizeof *ref);
  CHECK(out && ref, "alloc");
  if (!out || !ref) return;
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < n; i++) {
    ref[i] = (double)(i % 1000) / 7.0 - 50.0;
    out[i] = (float)ref[i];
  }
  uint32_t pw = kl_poison_word(KL_F32);
  size_t unw[] = {(3u << 20) + 5, (1u << 20) - 1, n - 1}; /* the first is not in the first part touched */
  for (int k = 0; k < 3; k++) memcpy(&out[unw[k]], &pw, 4);
  out[(2u << 20) + 7] = NAN;
  out[(4u << 20) + 11] = NAN;
  size_t bad[] = {(4u << 20) + 100, (1u << 20) + 3, (2u << 20)};
  for (int k = 0; k < 3; k++) out[bad[k]] = (float)(ref[bad[k]] + 2.0); /* equal worst errors */
  for (size_t i = 0; i < n; i++) {
    ref2 += ref[i] * ref[i];
    int skip = isnan(out[i]);
    for (int k = 0; k < 3; k++) skip |= i == unw[k];
    if (!skip) err2 += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
  }
  kl_cmp c;
  CHECK(kl_buf_compare(out, KL_F32, ref, KL_F64, n, 1.0, 0, pw, 1, &c) == KL_OK, "big compare");
  CHECK(c.n_unwritten == 3 && c.first_unwritten == (int64_t)((1u << 20) - 1), "unwritten %zu first %lld",
        c.n_unwritten, (long long)c.first_unwritten);
  CHECK(c.n_nonfinite == 2 && c.first_nonfinite == (int64_t)((2u << 20) + 7), "nonfinite %zu first %lld",
        c.n_nonfinite, (long long)c.first_nonfinite);
  CHECK(c.n_bad == 3 && c.first_bad == (int64_t)((1u << 20) + 3), "bad %zu first %lld", c.n_bad,
        (long long)c.first_bad);
  CHECK(c.worst_index == (int64_t)((1u << 20) + 3), "worst at %lld (the earliest of equal errors)",
        (long long)c.worst_index);
  CHECK(fabs(c.err_norm - sqrt(err2)) < 1e-9 * sqrt(err2), "err_norm %.17g vs %.17g", c.err_norm, sqrt(err2));
  CHECK(fabs(c.ref_norm - sqrt(ref2)) < 1e-9 * sqrt(ref2), "ref_norm %.17g vs %.17g", c.ref_norm, sqrt(ref2));
  CHECK(c.ref_max_abs == 999.0 / 7.0 - 50.0, "ref_max_abs %g", c.ref_max_abs);
  free(out);
  free(ref);
}

static uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

/* Fill, digest and mask of buffers large enough to run in parts on several threads
   give what one pass gives: the fill is counter-based (a prefix filled alone has the same
   values), the digest is the host region check's, the mask is the guard pattern. */
static void test_parts(void) {
  size_t n = (3u << 20) + 5, m = (1u << 20) + 7;
  float *p = malloc(n * sizeof *p), *q = malloc(m * sizeof *q);
  uint32_t *w = malloc(n * sizeof *w), *x = malloc(n * sizeof *x);
  CHECK(p && q && w && x, "alloc");
  if (!p || !q || !w || !x) return;
  kl_dist dists[] = {KL_DIST_UNIFORM, KL_DIST_NORMAL, KL_DIST_INT};
  for (int d = 0; d < 3; d++) {
    CHECK(kl_buf_fill(p, KL_F32, n, dists[d], -3, 4, 99) == KL_OK, "fill big");
    CHECK(kl_buf_fill(q, KL_F32, m, dists[d], -3, 4, 99) == KL_OK, "fill prefix");
    CHECK(memcmp(p, q, m * sizeof *q) == 0, "dist %d: the parts' fill differs from one pass", d);
  }
  /* the last part's tail: a buffer that ends inside a part matches the longer one */
  size_t t = (2u << 20) + 3;
  float *r = malloc(t * sizeof *r);
  if (r) {
    kl_buf_fill(r, KL_F32, t, KL_DIST_NORMAL, 0, 1, 7);
    kl_buf_fill(p, KL_F32, n, KL_DIST_NORMAL, 0, 1, 7);
    CHECK(memcmp(p, r, t * sizeof *r) == 0, "normal fill: a part boundary changed values");
    free(r);
  }
  for (size_t i = 0; i < n; i++) w[i] = (uint32_t)(i * 2654435761u);
  /* the digest's formula, as the GPU's check kernel computes it, in one pass */
  uint64_t want = 0, seed = 12345;
  for (size_t i = 0; i < n; i++) {
    uint32_t k = mix32((uint32_t)i * 0x9E3779B1u + (uint32_t)(i >> 32) * 0x7FEB352Du + (uint32_t)seed);
    want += mix32(w[i] ^ k);
  }
  CHECK(kl_digest(w, n, seed) == want, "digest in parts differs from one pass");
  CHECK(kl_digest(w, n, seed + 1) != want, "digest ignores its seed");
  kl_buf_mask(x, w, n, 77);
  int bad = 0;
  for (size_t i = 0; i < n; i += 4099) bad += x[i] != (w[i] ^ kl_mask_word(i, 77));
  bad += x[n - 1] != (w[n - 1] ^ kl_mask_word(n - 1, 77));
  CHECK(bad == 0, "%d masked words are not the mask", bad);
  /* the mask depends on the whole 64-bit key: keys that differ only above bit 32 differ */
  int same = 0;
  for (uint64_t i = 0; i < 1024; i++)
    same += kl_mask_word(i, 77) == kl_mask_word(i, 77 + (UINT64_C(1) << 40));
  CHECK(same < 4, "%d of 1024 mask words ignore the key's high half", same);
  kl_buf_mask(x, x, n, 77);
  CHECK(memcmp(x, w, n * sizeof *w) == 0, "masking twice is not the identity");
  free(p);
  free(q);
  free(w);
  free(x);
}

/* Parts as the GPU's blocks write them (firsts -1 where a block has none), merged in
   block order: the first block with an element of a kind gives its first, counts add,
   the worst is the largest error, the earliest block of equal ones. */
static void test_cmp_merge(void) {
  kl_cmp_part p[3];
  memset(p, 0, sizeof p);
  for (int b = 0; b < 3; b++) {
    p[b].first_unwritten = p[b].first_nonfinite = p[b].first_bad = -1;
    p[b].worst_index = -1;
  }
  p[0].err2 = 1, p[0].ref2 = 4, p[0].refmax = 2, p[0].maxerr = 0.5, p[0].worst_index = 3;
  p[1].err2 = 2, p[1].ref2 = 5, p[1].refmax = 7, p[1].maxerr = 0.75, p[1].worst_index = 40;
  p[1].worst_out = 1.5, p[1].worst_ref = 0.75;
  p[1].n_bad = 2, p[1].first_bad = 41;
  p[2].maxerr = 0.75, p[2].worst_index = 80; /* ties with block 1: block 1 stays */
  p[2].n_bad = 1, p[2].first_bad = 81, p[2].n_unwritten = 3, p[2].first_unwritten = 82;
  kl_cmp c;
  kl_cmp_merge(p, 3, 100, &c);
  CHECK(c.n == 100 && c.n_bad == 3 && c.first_bad == 41, "bad %zu first %lld", c.n_bad,
        (long long)c.first_bad);
  CHECK(c.n_unwritten == 3 && c.first_unwritten == 82, "unwritten %zu first %lld", c.n_unwritten,
        (long long)c.first_unwritten);
  CHECK(c.n_nonfinite == 0 && c.first_nonfinite == -1, "nonfinite");
  CHECK(c.worst_index == 40 && c.max_abs_err == 0.75 && c.worst_out == 1.5, "worst at %lld",
        (long long)c.worst_index);
  CHECK(c.err_norm == sqrt(3.0) && c.ref_norm == 3.0 && c.ref_max_abs == 7, "norms %g %g", c.err_norm,
        c.ref_norm);
}

int main(void) {
  test_sizes();
  test_half();
  test_poison();
  test_fill();
  test_hash();
  test_compare();
  test_compare_parts();
  test_parts();
  test_cmp_merge();
  test_first_diff();
  test_convert();
  if (failures) {
    fprintf(stderr, "test_buf: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_buf: all passed\n");
  return 0;
}
