/* kl_buf.c: host buffers: deterministic fill, poison, hash, compare and dtype conversion. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "kl_internal.h"

/* Work goes through small stack chunks so every dtype/distribution pair shares one
   generator loop and one store loop, each simple enough for the compiler to keep tight. */
enum { CHUNK = 1024 };

/* clang-format off */
size_t kl_dtype_size(kl_dtype t) {
  switch (t) {
  case KL_F32: case KL_I32: case KL_U32: return 4;
  case KL_F64: case KL_I64: return 8;
  case KL_F16: case KL_BF16: return 2;
  case KL_U8: case KL_I8: return 1;
  }
  return 0;
}
/* clang-format on */

static int is_float_type(kl_dtype t) { return t == KL_F32 || t == KL_F64 || t == KL_F16 || t == KL_BF16; }

/* ---- half and bfloat16 ---- */

/* Rounds a double straight to a binary format with ebits/mbits (round to nearest even),
   so F64 -> F16 never suffers the double rounding of going through float. */
static uint16_t round_small(double d, int ebits, int mbits) {
  uint64_t b;
  memcpy(&b, &d, 8);
  uint16_t sign = (uint16_t)((b >> 63) << (ebits + mbits));
  int ex = (int)((b >> 52) & 0x7FF);
  uint64_t mant = b & ((UINT64_C(1) << 52) - 1);
  uint32_t expmask = ((1u << ebits) - 1) << mbits;
  if (ex == 0x7FF) {
    if (mant == 0) return (uint16_t)(sign | expmask);
    /* Keep the top payload bits and force the quiet bit so the result stays a NaN. */
    uint32_t pay = (uint32_t)(mant >> (52 - mbits));
    return (uint16_t)(sign | expmask | (1u << (mbits - 1)) | pay);
  }
  if (ex == 0) return sign; /* double subnormals are far below either target's range */
  int bias = (1 << (ebits - 1)) - 1;
  int e = ex - 1023;
  if (e >= 1 - bias && e <= bias) {
    /* Common case, a target normal: round on the raw bits (adding half-ulp minus one plus
       the lsb gives ties-to-even) and let any carry run into the exponent, up to inf. */
    int sh = 52 - mbits;
    uint64_t ab = b & ~(UINT64_C(1) << 63);
    ab += (UINT64_C(1) << (sh - 1)) - 1 + ((ab >> sh) & 1);
    return (uint16_t)(sign | (uint16_t)((ab >> sh) - ((uint64_t)(1023 - bias) << mbits)));
  }
  uint64_t m = mant | (UINT64_C(1) << 52);
  int shift = 52 - mbits;
  int subnormal = e < 1 - bias;
  if (subnormal) shift += (1 - bias) - e;
  if (shift > 60) return sign;
  uint64_t q = m >> shift, rem = m & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  int64_t bits;
  if (subnormal) bits = (int64_t)q; /* rounding up to 1<<mbits lands exactly on the smallest normal */
  else bits = ((int64_t)(e + bias - 1) << mbits) + (int64_t)q; /* the carry bumps the exponent */
  if (bits >= (int64_t)expmask) bits = expmask;                /* overflow rounds to infinity */
  return (uint16_t)(sign | (uint16_t)bits);
}

static uint16_t f64_to_f16(double d) { return round_small(d, 5, 10); }
static uint16_t f64_to_bf16(double d) { return round_small(d, 8, 7); }

static double f16_to_f64(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0x1F) {
    v = m ? NAN : INFINITY;
  } else if (e == 0) {
    v = (double)m * 0x1p-24;
  } else {
    /* Rebias into a double directly; ldexp is a libm call on the compare hot path. */
    uint64_t b = ((uint64_t)(e - 15 + 1023) << 52) | ((uint64_t)m << 42);
    memcpy(&v, &b, 8);
  }
  return s ? -v : v;
}

static double bf16_to_f64(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- loads and stores through double ---- */

/* Truncates toward zero like a C cast, but saturates and maps NaN to 0, since a plain
   cast of an out-of-range double is undefined behaviour. */
static int64_t sat_i64(double d, double lo, double hi_excl, int64_t ilo, int64_t ihi) {
  if (d != d) return 0;
  if (d <= lo) return ilo;
  if (d >= hi_excl) return ihi;
  return (int64_t)d;
}

/* One loop per dtype: the switch sits outside the element loop. */
#define KL_LOOP(T, expr)                         \
  do {                                           \
    T *o_ = (T *)dst + off;                      \
    for (size_t i = 0; i < k; i++) o_[i] = expr; \
  } while (0)

static void store_chunk(void *dst, kl_dtype t, size_t off, const double *v, size_t k) {
  switch (t) {
  case KL_F32: KL_LOOP(float, (float)v[i]); break;
  case KL_F64: memcpy((double *)dst + off, v, k * sizeof(double)); break;
  case KL_F16: KL_LOOP(uint16_t, f64_to_f16(v[i])); break;
  case KL_BF16: KL_LOOP(uint16_t, f64_to_bf16(v[i])); break;
  case KL_I32:
    KL_LOOP(int32_t, (int32_t)sat_i64(v[i], -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX));
    break;
  case KL_I64:
    KL_LOOP(int64_t, sat_i64(v[i], -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX));
    break;
  case KL_U32: KL_LOOP(uint32_t, (uint32_t)sat_i64(v[i], 0.0, 4294967296.0, 0, UINT32_MAX)); break;
  case KL_U8: KL_LOOP(uint8_t, (uint8_t)sat_i64(v[i], 0.0, 256.0, 0, 255)); break;
  case KL_I8: KL_LOOP(int8_t, (int8_t)sat_i64(v[i], -128.0, 128.0, -128, 127)); break;
  }
}
#undef KL_LOOP

#define KL_LOOP(T, expr)                               \
  do {                                                 \
    const T *s_ = (const T *)src + off;                \
    for (size_t i = 0; i < k; i++) v[i] = expr(s_[i]); \
  } while (0)

static void load_chunk(const void *src, kl_dtype t, size_t off, double *v, size_t k) {
  switch (t) {
  case KL_F32: KL_LOOP(float, (double)); break;
  case KL_F64: memcpy(v, (const double *)src + off, k * sizeof(double)); break;
  case KL_F16: KL_LOOP(uint16_t, f16_to_f64); break;
  case KL_BF16: KL_LOOP(uint16_t, bf16_to_f64); break;
  case KL_I32: KL_LOOP(int32_t, (double)); break;
  case KL_I64: KL_LOOP(int64_t, (double)); break;
  case KL_U32: KL_LOOP(uint32_t, (double)); break;
  case KL_U8: KL_LOOP(uint8_t, (double)); break;
  case KL_I8: KL_LOOP(int8_t, (double)); break;
  }
}
#undef KL_LOOP

/* Integer-to-integer conversion stays in int64 so I64 values above 2^53 survive. */
static int64_t load_int(const void *src, kl_dtype t, size_t i) {
  switch (t) {
  case KL_I32: return ((const int32_t *)src)[i];
  case KL_I64: return ((const int64_t *)src)[i];
  case KL_U32: return ((const uint32_t *)src)[i];
  case KL_U8: return ((const uint8_t *)src)[i];
  case KL_I8: return ((const int8_t *)src)[i];
  default: return 0;
  }
}

static void store_int(void *dst, kl_dtype t, size_t i, int64_t x) {
  switch (t) {
  case KL_I32:
    ((int32_t *)dst)[i] = (int32_t)(x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : x);
    break;
  case KL_I64: ((int64_t *)dst)[i] = x; break;
  case KL_U32: ((uint32_t *)dst)[i] = (uint32_t)(x < 0 ? 0 : x > (int64_t)UINT32_MAX ? UINT32_MAX : x); break;
  case KL_U8: ((uint8_t *)dst)[i] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x); break;
  case KL_I8: ((int8_t *)dst)[i] = (int8_t)(x < -128 ? -128 : x > 127 ? 127 : x); break;
  default: break;
  }
}

/* ---- parts on several threads ----
   Large buffers are processed in parts of a fixed size on up to 16 threads (this one
   included; a thread that cannot be started is no loss). Results are kept per part and
   combined in part order by the caller, so they never depend on the thread count. */

#define KL_PART ((size_t)1 << 20) /* elements (or words) per part; a multiple of CHUNK */
#define KL_MAX_THREADS 16

typedef void (*part_fn)(void *ctx, size_t part);
typedef struct part_pool {
  part_fn fn;
  void *ctx;
  size_t nparts;
  size_t next; /* taken with __atomic_fetch_add */
} part_pool;

static void *part_worker(void *arg) {
  part_pool *pool = arg;
  for (;;) {
    size_t i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED);
    if (i >= pool->nparts) return NULL;
    pool->fn(pool->ctx, i);
  }
}

static void run_parts(part_fn fn, void *ctx, size_t nparts) {
  part_pool pool = {fn, ctx, nparts, 0};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = cpus > 1 ? (size_t)cpus : 1;
  if (want > KL_MAX_THREADS) want = KL_MAX_THREADS;
  if (want > nparts) want = nparts;
  pthread_t th[KL_MAX_THREADS];
  size_t started = 0;
  for (size_t t = 1; t < want; t++) {
    if (pthread_create(&th[started], NULL, part_worker, &pool) != 0) break;
    started++;
  }
  part_worker(&pool);
  for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
}

static size_t nparts_of(size_t n) { return n >= 2 * KL_PART ? (n + KL_PART - 1) / KL_PART : 1; }

/* ---- fill ---- */

static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Counter-based (splitmix64 on the element index): element i depends only on seed and i,
   so any prefix or slice of a buffer is reproducible without generating what precedes it. */
static inline uint64_t ctr_rand(uint64_t key, uint64_t i) {
  return mix64(key + (i + 1) * UINT64_C(0x9E3779B97F4A7C15));
}

static inline double u01(uint64_t r) { return (double)(int64_t)(r >> 11) * 0x1.0p-53; } /* [0,1) */

/* The normal distribution's log and sine/cosine in plain IEEE double arithmetic (+, -,
   *, /, and sqrt by the caller; this file is compiled with -ffp-contract=off), not libm:
   the CUDA fill (kloop_fill in lua/kloop/eval/worker_client.lua's check_source) runs the
   same operations in the same order, so an input drawn on the device has the bits of the
   one drawn here (tests/unit/test_fill.sh, tests/gpu/fill_device.lua). Both are good to
   about an ulp, far more than a test input needs. */

#if defined(__FAST_MATH__)
#error "kl_buf.c must not be built with -ffast-math: its fills must round like kloop_fill on the device"
#endif

/* log(x) for a normal x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
   log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^21. */
static double log_arith(double x) {
  uint64_t bits;
  memcpy(&bits, &x, 8);
  int e = (int)((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
  double m;
  memcpy(&m, &bits, 8);
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e = e + 1;
  }
  double s = (m - 1.0) / (m + 1.0);
  double z = s * s;
  double p = 0.047619047619047616;  /* 1/21 */
  p = p * z + 0.05263157894736842;  /* 1/19 */
  p = p * z + 0.058823529411764705; /* 1/17 */
  p = p * z + 0.06666666666666667;  /* 1/15 */
  p = p * z + 0.07692307692307693;  /* 1/13 */
  p = p * z + 0.09090909090909091;  /* 1/11 */
  p = p * z + 0.1111111111111111;   /* 1/9 */
  p = p * z + 0.14285714285714285;  /* 1/7 */
  p = p * z + 0.2;                  /* 1/5 */
  p = p * z + 0.3333333333333333;   /* 1/3 */
  p = p * z + 1.0;
  return (double)e * 0.6931471805599453 + 2.0 * s * p;
}

/* sin and cos of 2 pi u for u in [0, 1): the quarter turn q = floor(4u) and x = (4u - q)
   pi/2 in [0, pi/2) (both exact), Taylor series to x^23 and x^22, then the quadrant. */
static void sincos_turn(double u, double *sn, double *cs) {
  double t = u * 4.0;
  int q = (int)t;
  double x = (t - (double)q) * 1.5707963267948966;
  double z = x * x;
  double ps = -3.868170170630684e-23;   /* -1/23! */
  ps = ps * z + 1.9572941063391263e-20; /* 1/21! */
  ps = ps * z + -8.22063524662433e-18;  /* -1/19! */
  ps = ps * z + 2.8114572543455206e-15; /* 1/17! */
  ps = ps * z + -7.647163731819816e-13; /* -1/15! */
  ps = ps * z + 1.6059043836821613e-10; /* 1/13! */
  ps = ps * z + -2.505210838544172e-08; /* -1/11! */
  ps = ps * z + 2.7557319223985893e-06; /* 1/9! */
  ps = ps * z + -0.0001984126984126984; /* -1/7! */
  ps = ps * z + 0.008333333333333333;   /* 1/5! */
  ps = ps * z + -0.16666666666666666;   /* -1/3! */
  ps = ps * z + 1.0;
  double pc = -8.896791392450574e-22;    /* -1/22! */
  pc = pc * z + 4.110317623312165e-19;   /* 1/20! */
  pc = pc * z + -1.5619206968586225e-16; /* -1/18! */
  pc = pc * z + 4.779477332387385e-14;   /* 1/16! */
  pc = pc * z + -1.1470745597729725e-11; /* -1/14! */
  pc = pc * z + 2.08767569878681e-09;    /* 1/12! */
  pc = pc * z + -2.755731922398589e-07;  /* -1/10! */
  pc = pc * z + 2.48015873015873e-05;    /* 1/8! */
  pc = pc * z + -0.001388888888888889;   /* -1/6! */
  pc = pc * z + 0.041666666666666664;    /* 1/4! */
  pc = pc * z + -0.5;                    /* -1/2! */
  pc = pc * z + 1.0;
  double sx = x * ps, cx = pc;
  switch (q & 3) {
  case 0: *sn = sx, *cs = cx; break;
  case 1: *sn = cx, *cs = -sx; break;
  case 2: *sn = -sx, *cs = -cx; break;
  default: *sn = -cx, *cs = sx; break;
  }
}

typedef struct fill_job {
  void *p;
  kl_dtype t;
  size_t n;
  kl_dist d;
  double a, b, lo, span;
  uint64_t key;
} fill_job;

/* Elements [lo, hi) of a fill; lo is a multiple of CHUNK (normal pairs never straddle). */
static void fill_range(const fill_job *f, size_t lo_i, size_t hi_i) {
  double v[CHUNK];
  double a = f->a, b = f->b;
  uint64_t key = f->key;
  for (size_t off = lo_i; off < hi_i; off += CHUNK) {
    size_t k = hi_i - off < CHUNK ? hi_i - off : CHUNK;
    size_t i;
    switch (f->d) {
    case KL_DIST_UNIFORM:
      for (i = 0; i < k; i++) v[i] = a + (b - a) * u01(ctr_rand(key, off + i));
      break;
    case KL_DIST_NORMAL:
      /* Box-Muller on pairs (2j, 2j+1); CHUNK is even, so pairs never straddle chunks. */
      for (i = 0; i < k; i += 2) {
        uint64_t j = off + i;
        double u1 = ((double)(int64_t)(ctr_rand(key, j) >> 11) + 1.0) * 0x1.0p-53; /* (0,1]: log is finite */
        double u2 = u01(ctr_rand(key, j + 1));
        double r = sqrt(-2.0 * log_arith(u1)), sn, cs;
        sincos_turn(u2, &sn, &cs);
        v[i] = a + b * (r * cs);
        if (i + 1 < k) v[i + 1] = a + b * (r * sn);
      }
      break;
    case KL_DIST_CONST:
      for (i = 0; i < k; i++) v[i] = a;
      break;
    case KL_DIST_INT:
      for (i = 0; i < k; i++) {
        double x = floor(u01(ctr_rand(key, off + i)) * f->span);
        if (x >= f->span) x = f->span - 1; /* u*span can round up to span for huge spans */
        v[i] = f->lo + x;
      }
      break;
    }
    store_chunk(f->p, f->t, off, v, k);
  }
}

static void fill_part(void *ctx, size_t part) {
  const fill_job *f = ctx;
  size_t lo = part * KL_PART, hi = lo + KL_PART < f->n ? lo + KL_PART : f->n;
  fill_range(f, lo, hi);
}

int kl_buf_fill_args(kl_dist d, double a, double b, uint64_t seed, double *lo, double *span, uint64_t *key) {
  if (d != KL_DIST_UNIFORM && d != KL_DIST_NORMAL && d != KL_DIST_CONST && d != KL_DIST_INT) return KL_EINVAL;
  *lo = 0, *span = 0;
  if (d == KL_DIST_INT) {
    *lo = ceil(a);
    double hi = floor(b);
    if (!(hi >= *lo)) return KL_EINVAL; /* empty range, or NaN bounds */
    *span = hi - *lo + 1;
  }
  *key = mix64(seed ^ UINT64_C(0x6B6C6F6F70627566)); /* "kloopbuf" */
  return KL_OK;
}

int kl_buf_fill(void *p, kl_dtype t, size_t n, kl_dist d, double a, double b, uint64_t seed) {
  if (kl_dtype_size(t) == 0) return KL_EINVAL;
  double lo, span;
  uint64_t key;
  if (kl_buf_fill_args(d, a, b, seed, &lo, &span, &key) != KL_OK) return KL_EINVAL;
  if (n == 0) return KL_OK;
  if (!p) return KL_EINVAL;
  /* counter-based: element i depends only on seed and i, so parts on several threads
     give the same bytes as one pass */
  fill_job f = {p, t, n, d, a, b, lo, span, key};
  size_t np = nparts_of(n);
  if (np == 1) fill_range(&f, 0, n);
  else run_parts(fill_part, &f, np);
  return KL_OK;
}

/* ---- poison ---- */

/* Each word, repeated little-endian over memory, makes every element of its type a quiet
   NaN with a payload no arithmetic produces, so "never written" is told apart from "wrong". */
uint32_t kl_poison_word(kl_dtype t) {
  switch (t) {
  case KL_F32: return 0x7FC0DEADu;  /* quiet NaN, payload 0x40DEAD */
  case KL_F64: return 0x7FFADEADu;  /* 0x7FFADEAD7FFADEAD: quiet NaN */
  case KL_F16: return 0x7E5A7E5Au;  /* two half quiet NaNs 0x7E5A */
  case KL_BF16: return 0x7FDA7FDAu; /* two bf16 quiet NaNs 0x7FDA */
  default: return 0xDEADBEEFu;
  }
}

/* Byte k of the pattern is byte k%4 of the word in little-endian order, on any host, so a
   buffer poisoned here matches what a device fill32 of the same word leaves behind. */
void kl_buf_poison(void *p, size_t bytes, uint32_t word) {
  unsigned char *c = p;
  if (!c || bytes == 0) return;
  unsigned char pat[4] = {(unsigned char)word, (unsigned char)(word >> 8), (unsigned char)(word >> 16),
                          (unsigned char)(word >> 24)};
  size_t done = bytes < 4 ? bytes : 4;
  memcpy(c, pat, done);
  /* Doubling copies keep the period (done stays a multiple of 4) and run at memcpy speed;
     capping the block keeps the source in cache. */
  while (done < bytes) {
    size_t k = done < ((size_t)1 << 16) ? done : ((size_t)1 << 16);
    if (k > bytes - done) k = bytes - done;
    memcpy(c + done, c, k);
    done += k;
  }
}

/* ---- guard zones and digests ----
   Cheap 32-bit mixing (murmur3's finalizer): the GPU kernel does the same per word, and a
   sum is order-independent, so a parallel reduction agrees with this loop exactly. The
   key of word i depends on i and the seed, so moved or swapped words change a digest. */

static inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

static inline uint32_t pos_key(uint64_t i, uint64_t seed) {
  return fmix32((uint32_t)i * 0x9E3779B1u + (uint32_t)(i >> 32) * 0x7FEB352Du + (uint32_t)seed);
}

uint32_t kl_guard_word(uint64_t i, uint64_t seed) {
  return fmix32(pos_key(i, seed) ^ (uint32_t)(seed >> 32));
}

void kl_guard_fill(void *p, size_t nwords, uint64_t seed) {
  uint32_t *w = p;
  for (size_t i = 0; i < nwords; i++) w[i] = kl_guard_word(i, seed);
}

typedef struct word_job {
  uint32_t *dst;
  const uint32_t *src;
  size_t nwords;
  uint64_t seed;
  uint64_t *sums; /* digest: one per part */
  size_t nparts;
} word_job;

/* Words [lo, hi) of part `part` (the last part, or the only one, runs to the end). */
static void word_range(const word_job *j, size_t part, size_t *lo, size_t *hi) {
  *lo = part * KL_PART;
  *hi = part + 1 >= j->nparts ? j->nwords : *lo + KL_PART;
}

/* The references' mask: Philox4x32-10 (the counter-based generator of Random123 and
   cuRAND) keyed with the 64-bit seed, counter = the word's index / 4. Unlike the guard
   pattern (two invertible mixes of a 32-bit key), a word of it and its index do not give
   the key away. The comparison kernel (lua/kloop/eval/worker_client.lua) computes the
   same words; tests/unit/test_buf.c checks both against each other. */
static void philox10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[1] = (uint32_t)p1;
    c[3] = (uint32_t)p0;
    c[0] = n0;
    c[2] = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

uint32_t kl_mask_word(uint64_t i, uint64_t seed) {
  uint32_t c[4] = {(uint32_t)(i >> 2), (uint32_t)(i >> 34), 0x6B6C6F6Fu, 0x6D61736Bu}; /* "kloo", "mask" */
  philox10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
  return c[i & 3];
}

static void mask_part(void *ctx, size_t part) {
  const word_job *j = ctx;
  size_t lo, hi;
  word_range(j, part, &lo, &hi);
  for (size_t i = lo; i < hi; i++) j->dst[i] = j->src[i] ^ kl_mask_word(i, j->seed);
}

void kl_buf_mask(void *dst, const void *src, size_t nwords, uint64_t seed) {
  word_job j = {dst, src, nwords, seed, NULL, nparts_of(nwords)};
  run_parts(mask_part, &j, j.nparts);
}

static void digest_part(void *ctx, size_t part) {
  const word_job *j = ctx;
  size_t lo, hi;
  word_range(j, part, &lo, &hi);
  uint64_t acc = 0;
  for (size_t i = lo; i < hi; i++) acc += fmix32(j->src[i] ^ pos_key(i, j->seed));
  j->sums[part] = acc;
}

/* A sum, so the parts' sums add up to exactly what one pass gives. */
uint64_t kl_digest(const void *p, size_t nwords, uint64_t seed) {
  size_t np = nparts_of(nwords);
  uint64_t one = 0;
  uint64_t *sums = np > 1 ? calloc(np, sizeof *sums) : NULL;
  if (!sums) np = 1;
  word_job j = {NULL, p, nwords, seed, sums ? sums : &one, np};
  run_parts(digest_part, &j, np);
  uint64_t acc = 0;
  for (size_t k = 0; k < np; k++) acc += j.sums[k];
  free(sums);
  return acc;
}

void kl_regions_check(const kl_region *r, int n, kl_region_result *out) {
  for (int k = 0; k < n; k++) {
    const uint32_t *w = (const uint32_t *)(uintptr_t)r[k].ptr;
    uint64_t value = 0, first = 0;
    if (r[k].mode == KL_REGION_DIGEST) {
      value = kl_digest(w, r[k].nwords, r[k].seed);
    } else {
      for (uint64_t i = 0; i < r[k].nwords; i++) {
        uint32_t want = r[k].mode == KL_REGION_GUARD ? kl_guard_word(i, r[k].seed) : r[k].word;
        if (w[i] != want) {
          if (value == 0) first = ~i;
          value++;
        }
      }
    }
    out[k].value = value;
    out[k].first = first;
  }
}

/* ---- hash ---- */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

#define HP1 UINT64_C(0x9E3779B185EBCA87)
#define HP2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define HP3 UINT64_C(0x165667B19E3779F9)
#define HP4 UINT64_C(0x85EBCA77C2B2AE63)
#define HP5 UINT64_C(0x27D4EB2F165667C5)

static inline uint64_t hround(uint64_t acc, uint64_t w) {
  acc += w * HP2;
  return rotl64(acc, 31) * HP1;
}

static inline uint64_t rd64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* xxh64-style: four independent lanes so the multiplies overlap; buffers reach 100s of MB.
   Words are read in host order, which is little-endian everywhere kloop runs. */
uint64_t kl_buf_hash(const void *data, size_t n) {
  const unsigned char *p = data, *end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = HP1 + HP2, v2 = HP2, v3 = 0, v4 = (uint64_t)0 - HP1;
    const unsigned char *lim = end - 32;
    do {
      v1 = hround(v1, rd64(p));
      v2 = hround(v2, rd64(p + 8));
      v3 = hround(v3, rd64(p + 16));
      v4 = hround(v4, rd64(p + 24));
      p += 32;
    } while (p <= lim);
    h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = (h ^ hround(0, v1)) * HP1 + HP4;
    h = (h ^ hround(0, v2)) * HP1 + HP4;
    h = (h ^ hround(0, v3)) * HP1 + HP4;
    h = (h ^ hround(0, v4)) * HP1 + HP4;
  } else {
    h = HP5;
  }
  h += (uint64_t)n;
  for (; p + 8 <= end; p += 8) h = rotl64(h ^ hround(0, rd64(p)), 27) * HP1 + HP4;
  if (p + 4 <= end) {
    uint32_t w;
    memcpy(&w, p, 4);
    h = rotl64(h ^ ((uint64_t)w * HP1), 23) * HP2 + HP3;
    p += 4;
  }
  for (; p < end; p++) h = rotl64(h ^ (*p * HP5), 11) * HP1;
  h ^= h >> 33;
  h *= HP2;
  h ^= h >> 29;
  h *= HP3;
  h ^= h >> 32;
  return h;
}

/* ---- compare ---- */

/* clang-format off */
static inline uint64_t raw_bits(const unsigned char *p, size_t s) {
  switch (s) {
  case 1: return *p;
  case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
  case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
  default: { uint64_t x; memcpy(&x, p, 8); return x; }
  }
}
/* clang-format on */

/* One comparison over [lo, hi): sums and firsts of that range (kl_buf_compare). */
typedef struct cmp_part {
  const void *out, *ref;
  kl_dtype out_t, ref_t;
  size_t os, period, lo, hi;
  double atol, rtol;
  int check_poison;
  const uint64_t *pat;
  kl_cmp_part *s; /* the range's sums, counts, firsts and worst element */
} cmp_part;

static void compare_range(cmp_part *p) {
  const unsigned char *ob = p->out;
  double ov[CHUNK], rv[CHUNK];
  kl_cmp_part *res = p->s;
  memset(res, 0, sizeof *res);
  res->first_unwritten = res->first_nonfinite = res->first_bad = res->worst_index = -1;
  for (size_t off = p->lo; off < p->hi; off += CHUNK) {
    size_t k = p->hi - off < CHUNK ? p->hi - off : CHUNK;
    load_chunk(p->out, p->out_t, off, ov, k);
    load_chunk(p->ref, p->ref_t, off, rv, k);
    for (size_t i = 0; i < k; i++) {
      size_t idx = off + i;
      double o = ov[i], r = rv[i];
      int ref_fin = isfinite(r);
      if (ref_fin) {
        double ar = fabs(r);
        res->ref2 += r * r;
        if (ar > res->refmax) res->refmax = ar;
      }
      if (p->check_poison && raw_bits(ob + idx * p->os, p->os) == p->pat[idx % p->period]) {
        if (res->n_unwritten++ == 0) res->first_unwritten = (int64_t)idx;
        continue;
      }
      if (!ref_fin || !isfinite(o)) {
        int same = !ref_fin && ((isnan(r) && isnan(o)) || (isinf(r) && o == r));
        if (!same && res->n_nonfinite++ == 0) res->first_nonfinite = (int64_t)idx;
        continue;
      }
      double e = fabs(o - r);
      res->err2 += e * e;
      if (e > p->atol + p->rtol * fabs(r) && res->n_bad++ == 0) res->first_bad = (int64_t)idx;
      if (res->worst_index < 0 || e > res->maxerr) {
        res->maxerr = e;
        res->worst_index = (int64_t)idx;
        res->worst_out = o;
        res->worst_ref = r;
      }
    }
  }
}

/* Large comparisons run in parts (run_parts), merged in order, so the result does not
   depend on how many threads there were. */
static void compare_part(void *ctx, size_t part) { compare_range(&((cmp_part *)ctx)[part]); }

int kl_buf_compare(const void *out, kl_dtype out_t, const void *ref, kl_dtype ref_t, size_t n, double atol,
                   double rtol, uint32_t poison, int check_poison, kl_cmp *res) {
  size_t os = kl_dtype_size(out_t);
  if (!res || os == 0 || kl_dtype_size(ref_t) == 0) return KL_EINVAL;
  memset(res, 0, sizeof *res);
  res->n = n;
  res->first_unwritten = res->first_nonfinite = res->first_bad = res->worst_index = -1;
  if (n == 0) return KL_OK;
  if (!out || !ref) return KL_EINVAL;

  /* The poison an element of out_t would hold, from its byte offset in a buffer poisoned
     from its start: 1- and 2-byte elements cycle through the word's bytes. */
  uint64_t pat[4];
  size_t period = os >= 4 ? 1 : 4 / os;
  {
    unsigned char buf[8];
    kl_buf_poison(buf, 8, poison);
    for (size_t j = 0; j < period; j++) pat[j] = raw_bits(buf + j * os, os);
  }
  kl_cmp_part one_s;
  cmp_part one = {out, ref, out_t, ref_t, os, period, 0, n, atol, rtol, check_poison, pat, &one_s};
  size_t nparts = nparts_of(n);
  cmp_part *parts = nparts > 1 ? calloc(nparts, sizeof *parts) : NULL;
  kl_cmp_part *sums = parts ? calloc(nparts, sizeof *sums) : NULL;
  if (!sums) {
    free(parts);
    parts = NULL;
    nparts = 1;
    sums = &one_s;
    compare_range(&one);
  } else {
    for (size_t i = 0; i < nparts; i++) {
      parts[i] = one;
      parts[i].lo = i * KL_PART;
      parts[i].hi = i + 1 == nparts ? n : (i + 1) * KL_PART;
      parts[i].s = &sums[i];
    }
    run_parts(compare_part, parts, nparts);
  }
  kl_cmp_merge(sums, nparts, n, res);
  if (parts) {
    free(parts);
    free(sums);
  }
  return KL_OK;
}

/* The parts of one comparison, in order, into its result: sums added, the first part
   with an element of a kind gives that kind's first index, the worst element is the
   largest error (the earliest of equal ones). The host comparison and the GPU's blocks
   (lua/kloop/worker/backend_cuda.lua) are both merged here. */
void kl_cmp_merge(const kl_cmp_part *parts, size_t nparts, size_t n, kl_cmp *res) {
  memset(res, 0, sizeof *res);
  res->n = n;
  res->first_unwritten = res->first_nonfinite = res->first_bad = res->worst_index = -1;
  double err2 = 0, ref2 = 0, refmax = 0, maxerr = 0;
  for (size_t i = 0; i < nparts; i++) {
    const kl_cmp_part *q = &parts[i];
    err2 += q->err2;
    ref2 += q->ref2;
    if (q->refmax > refmax) refmax = q->refmax;
    if (q->n_unwritten && res->n_unwritten == 0) res->first_unwritten = q->first_unwritten;
    if (q->n_nonfinite && res->n_nonfinite == 0) res->first_nonfinite = q->first_nonfinite;
    if (q->n_bad && res->n_bad == 0) res->first_bad = q->first_bad;
    res->n_unwritten += (size_t)q->n_unwritten;
    res->n_nonfinite += (size_t)q->n_nonfinite;
    res->n_bad += (size_t)q->n_bad;
    if (q->worst_index >= 0 && (res->worst_index < 0 || q->maxerr > maxerr)) {
      maxerr = q->maxerr;
      res->worst_index = q->worst_index;
      res->worst_out = q->worst_out;
      res->worst_ref = q->worst_ref;
    }
  }
  res->max_abs_err = maxerr;
  res->err_norm = sqrt(err2);
  res->ref_norm = sqrt(ref2);
  res->ref_max_abs = refmax;
}

/* Returns -2 for an unknown dtype: -1 already means "identical". */
int64_t kl_buf_first_diff(const void *a, const void *b, kl_dtype t, size_t n) {
  size_t s = kl_dtype_size(t);
  if (s == 0) return -2;
  size_t bytes = n * s;
  if (bytes == 0 || a == b) return -1;
  const unsigned char *pa = a, *pb = b;
  /* memcmp per block finds the block quickly; only the first differing block is walked. */
  const size_t blk = 4096;
  for (size_t off = 0; off < bytes; off += blk) {
    size_t k = bytes - off < blk ? bytes - off : blk;
    if (memcmp(pa + off, pb + off, k) != 0) {
      for (size_t j = 0; j < k; j++)
        if (pa[off + j] != pb[off + j]) return (int64_t)((off + j) / s);
    }
  }
  return -1;
}

/* A conversion in parts of elements (floats through doubles, CHUNK at a time). */
typedef struct conv_job {
  const void *src;
  kl_dtype st;
  void *dst;
  kl_dtype dt;
  size_t n, nparts;
} conv_job;

static void conv_part(void *ctx, size_t part) {
  const conv_job *j = ctx;
  size_t lo = part * KL_PART, hi = part + 1 >= j->nparts ? j->n : lo + KL_PART;
  double v[CHUNK];
  for (size_t off = lo; off < hi; off += CHUNK) {
    size_t k = hi - off < CHUNK ? hi - off : CHUNK;
    load_chunk(j->src, j->st, off, v, k);
    store_chunk(j->dst, j->dt, off, v, k);
  }
}

int kl_buf_convert(const void *src, kl_dtype src_t, void *dst, kl_dtype dst_t, size_t n) {
  size_t ss = kl_dtype_size(src_t), ds = kl_dtype_size(dst_t);
  if (ss == 0 || ds == 0) return KL_EINVAL;
  if (n == 0) return KL_OK;
  if (!src || !dst) return KL_EINVAL;
  if (src_t == dst_t) {
    memmove(dst, src, n * ss);
    return KL_OK;
  }
  if (!is_float_type(src_t) && !is_float_type(dst_t)) {
    for (size_t i = 0; i < n; i++) store_int(dst, dst_t, i, load_int(src, src_t, i));
    return KL_OK;
  }
  conv_job j = {src, src_t, dst, dst_t, n, nparts_of(n)};
  run_parts(conv_part, &j, j.nparts);
  return KL_OK;
}
