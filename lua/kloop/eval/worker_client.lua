-- kloop.eval.worker_client: the evaluator's worker, from the parent's side: starts it (hello,
-- the reference, the task's setup, the measured ceilings), sends requests with deadlines
-- derived from the work, and turns a dead or hung worker into a verdict. The functions
-- in `methods` are Evaluator methods (kloop.eval.evaluator installs them). The worker is
-- a kloop.core.proc Proc: an evaluator dropped without close() does not leak it.
local cjson = require("cjson")
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local proc = require("kloop.core.proc")
local compile = require("kloop.eval.compile")
local taskmod = require("kloop.eval.task")

local M = {}
local W = {}
-- (benches: KLOOP_WAITS_LOG=FILE also gets each request's send and reply)
local WAITS_LOG = (os.getenv("KLOOP_WAITS_LOG") or "") ~= ""
M.methods = W

-- The L2 flush before each timed repetition (CUDA): every thread streams float4s of a
-- buffer twice the L2 that holds zeros; the store never happens, the loads must.
M.flush_source = [[
extern "C" __global__ void kloop_l2_flush(const float4 *buf, unsigned long long n4, float *sink) {
  float acc = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    float4 v = buf[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;
}
]]

-- Guard zones and state digests on the GPU (kl_regions_check in src/kl_buf.c is the
-- same computation on the host): blockIdx.y picks a region, the blocks of a row share it.
-- The descriptors are copied in right before each launch, so a candidate that ran
-- earlier cannot have changed what is checked; results are zeroed the same way.
M.check_source = [[
struct kl_region { unsigned long long ptr, nwords, seed; unsigned mode, word; };
struct kl_region_result { unsigned long long value, first; };
__device__ __forceinline__ unsigned kl_fmix32(unsigned h) {
  h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16; return h;
}
__device__ __forceinline__ unsigned kl_pos_key(unsigned long long i, unsigned long long seed) {
  return kl_fmix32((unsigned)i * 0x9E3779B1u + (unsigned)(i >> 32) * 0x7FEB352Du + (unsigned)seed);
}
// one word of a region at index i (its position in the region: the key)
__device__ __forceinline__ void kl_check_word(const kl_region &g, unsigned long long i, unsigned v,
    unsigned long long &acc, unsigned long long &first) {
  unsigned k = kl_pos_key(i, g.seed);
  if (g.mode == 0) {
    acc += kl_fmix32(v ^ k);
  } else {
    unsigned want = g.mode == 1 ? kl_fmix32(k ^ (unsigned)(g.seed >> 32)) : g.word;
    if (v != want) { acc += 1; if (first < ~i) first = ~i; }
  }
}
__device__ __forceinline__ void kl_check4(const kl_region &g, unsigned long long i, uint4 v,
    unsigned long long &acc, unsigned long long &first) {
  kl_check_word(g, i, v.x, acc, first); kl_check_word(g, i + 1, v.y, acc, first);
  kl_check_word(g, i + 2, v.z, acc, first); kl_check_word(g, i + 3, v.w, acc, first);
}
// The words are read 16 bytes at a time, four loads in flight per thread where the
// region is larger than the grid's 16 words a thread (the big buffers, which the check
// waits on; a word at a time kept too few bytes in flight: 0.47 ms for 512 MB,
// round15c); the words before
// the first 16-byte boundary (a guard zone after a buffer starts anywhere on a word) and
// after the last whole 16 bytes are read one by one by the first threads. The sums and
// the first index do not depend on the order the words are read in.
extern "C" __global__ void __launch_bounds__(256) kloop_check_regions(const kl_region *regs, kl_region_result *out) {
  const kl_region g = regs[blockIdx.y];
  const unsigned *w = (const unsigned *)g.ptr;
  unsigned long long acc = 0, first = 0;
  unsigned long long head = ((16 - (g.ptr & 15)) & 15) >> 2;
  if (head > g.nwords) head = g.nwords;
  const unsigned long long nvec = (g.nwords - head) >> 2, tail0 = head + 4 * nvec;
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  if (tid < head) kl_check_word(g, tid, w[tid], acc, first);
  if (tid < g.nwords - tail0) kl_check_word(g, tail0 + tid, w[tail0 + tid], acc, first);
  const uint4 *v4 = (const uint4 *)(w + head);
  unsigned long long j = tid;
  for (; j + 3 * stride < nvec; j += 4 * stride) {
    uint4 a = v4[j], b = v4[j + stride], c = v4[j + 2 * stride], d = v4[j + 3 * stride];
    kl_check4(g, head + 4 * j, a, acc, first);
    kl_check4(g, head + 4 * (j + stride), b, acc, first);
    kl_check4(g, head + 4 * (j + 2 * stride), c, acc, first);
    kl_check4(g, head + 4 * (j + 3 * stride), d, acc, first);
  }
  for (; j < nvec; j += stride) kl_check4(g, head + 4 * j, v4[j], acc, first);
  for (int o = 16; o > 0; o >>= 1) {
    acc += __shfl_down_sync(0xffffffffu, acc, o);
    unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
    if (f > first) first = f;
  }
  if ((threadIdx.x & 31) == 0) {
    if (acc) atomicAdd(&out[blockIdx.y].value, acc);
    if (first) atomicMax(&out[blockIdx.y].first, first);
  }
}
// A guard zone's pattern written where it is (kl_guard_fill of src/kl_buf.c): mode 1's words
extern "C" __global__ void kloop_guard_fill(unsigned *w, unsigned long long nwords, unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < nwords;
       i += (unsigned long long)gridDim.x * blockDim.x)
    w[i] = kl_fmix32(kl_pos_key(i, seed) ^ (unsigned)(seed >> 32));
}
// An input drawn on the device: kl_buf_fill of src/kl_buf.c, element by element, every
// floating-point operation rounded as there (no fused multiply-add), so the bits are the
// host's (begin kl_fill: tests/unit/test_fill.sh compiles this text on the host and
// compares it with kl_buf.c's; it must stay plain C)
__device__ __forceinline__ unsigned long long kl_mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ unsigned long long kl_ctr(unsigned long long key, unsigned long long i) {
  return kl_mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull);
}
__device__ __forceinline__ double kl_u01(unsigned long long r) {
  return __dmul_rn((double)(long long)(r >> 11), 1.1102230246251565e-16);
}
__device__ __forceinline__ double kl_log(double x) {
  unsigned long long bits = (unsigned long long)__double_as_longlong(x);
  int e = (int)((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0xFFFFFFFFFFFFFull) | (1023ull << 52);
  double m = __longlong_as_double((long long)bits);
  if (m > 1.4142135623730951) { m = __dmul_rn(m, 0.5); e = e + 1; }
  double s = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
  double z = __dmul_rn(s, s);
  double p = 0.047619047619047616;
  p = __dadd_rn(__dmul_rn(p, z), 0.05263157894736842);
  p = __dadd_rn(__dmul_rn(p, z), 0.058823529411764705);
  p = __dadd_rn(__dmul_rn(p, z), 0.06666666666666667);
  p = __dadd_rn(__dmul_rn(p, z), 0.07692307692307693);
  p = __dadd_rn(__dmul_rn(p, z), 0.09090909090909091);
  p = __dadd_rn(__dmul_rn(p, z), 0.1111111111111111);
  p = __dadd_rn(__dmul_rn(p, z), 0.14285714285714285);
  p = __dadd_rn(__dmul_rn(p, z), 0.2);
  p = __dadd_rn(__dmul_rn(p, z), 0.3333333333333333);
  p = __dadd_rn(__dmul_rn(p, z), 1.0);
  return __dadd_rn(__dmul_rn((double)e, 0.6931471805599453), __dmul_rn(__dmul_rn(2.0, s), p));
}
__device__ __forceinline__ void kl_sincos_turn(double u, double *sn, double *cs) {
  double t = __dmul_rn(u, 4.0);
  int q = (int)t;
  double x = __dmul_rn(__dsub_rn(t, (double)q), 1.5707963267948966);
  double z = __dmul_rn(x, x);
  double ps = -3.868170170630684e-23;
  ps = __dadd_rn(__dmul_rn(ps, z), 1.9572941063391263e-20);
  ps = __dadd_rn(__dmul_rn(ps, z), -8.22063524662433e-18);
  ps = __dadd_rn(__dmul_rn(ps, z), 2.8114572543455206e-15);
  ps = __dadd_rn(__dmul_rn(ps, z), -7.647163731819816e-13);
  ps = __dadd_rn(__dmul_rn(ps, z), 1.6059043836821613e-10);
  ps = __dadd_rn(__dmul_rn(ps, z), -2.505210838544172e-08);
  ps = __dadd_rn(__dmul_rn(ps, z), 2.7557319223985893e-06);
  ps = __dadd_rn(__dmul_rn(ps, z), -0.0001984126984126984);
  ps = __dadd_rn(__dmul_rn(ps, z), 0.008333333333333333);
  ps = __dadd_rn(__dmul_rn(ps, z), -0.16666666666666666);
  ps = __dadd_rn(__dmul_rn(ps, z), 1.0);
  double pc = -8.896791392450574e-22;
  pc = __dadd_rn(__dmul_rn(pc, z), 4.110317623312165e-19);
  pc = __dadd_rn(__dmul_rn(pc, z), -1.5619206968586225e-16);
  pc = __dadd_rn(__dmul_rn(pc, z), 4.779477332387385e-14);
  pc = __dadd_rn(__dmul_rn(pc, z), -1.1470745597729725e-11);
  pc = __dadd_rn(__dmul_rn(pc, z), 2.08767569878681e-09);
  pc = __dadd_rn(__dmul_rn(pc, z), -2.755731922398589e-07);
  pc = __dadd_rn(__dmul_rn(pc, z), 2.48015873015873e-05);
  pc = __dadd_rn(__dmul_rn(pc, z), -0.001388888888888889);
  pc = __dadd_rn(__dmul_rn(pc, z), 0.041666666666666664);
  pc = __dadd_rn(__dmul_rn(pc, z), -0.5);
  pc = __dadd_rn(__dmul_rn(pc, z), 1.0);
  double sx = __dmul_rn(x, ps), cx = pc;
  switch (q & 3) {
  case 0: *sn = sx; *cs = cx; break;
  case 1: *sn = cx; *cs = -sx; break;
  case 2: *sn = -sx; *cs = -cx; break;
  default: *sn = -cx; *cs = sx; break;
  }
}
// element i of a fill (kl_dist: 0 uniform, 1 normal, 2 const, 3 int)
__device__ __forceinline__ double kl_fill_value(unsigned long long i, int dist, double a, double b, double lo,
    double span, unsigned long long key) {
  if (dist == 0) return __dadd_rn(a, __dmul_rn(__dsub_rn(b, a), kl_u01(kl_ctr(key, i))));
  if (dist == 1) {
    unsigned long long j = i & ~1ull; /* Box-Muller on the pair (j, j + 1) */
    double u1 = __dmul_rn(__dadd_rn((double)(long long)(kl_ctr(key, j) >> 11), 1.0), 1.1102230246251565e-16);
    double u2 = kl_u01(kl_ctr(key, j + 1));
    double r = __dsqrt_rn(__dmul_rn(-2.0, kl_log(u1))), sn, cs;
    kl_sincos_turn(u2, &sn, &cs);
    return __dadd_rn(a, __dmul_rn(b, __dmul_rn(r, (i & 1) ? sn : cs)));
  }
  if (dist == 2) return a;
  double x = floor(__dmul_rn(kl_u01(kl_ctr(key, i)), span));
  if (x >= span) x = __dsub_rn(span, 1.0);
  return __dadd_rn(lo, x);
}
// kl_buf.c's round_small: a double rounded to nearest even into a binary16-like format
__device__ __forceinline__ unsigned short kl_round_small(double d, int ebits, int mbits) {
  unsigned long long b = (unsigned long long)__double_as_longlong(d);
  unsigned short sign = (unsigned short)((b >> 63) << (ebits + mbits));
  int ex = (int)((b >> 52) & 0x7FF);
  unsigned long long mant = b & ((1ull << 52) - 1);
  unsigned expmask = ((1u << ebits) - 1) << mbits;
  if (ex == 0x7FF) {
    if (mant == 0) return (unsigned short)(sign | expmask);
    unsigned pay = (unsigned)(mant >> (52 - mbits));
    return (unsigned short)(sign | expmask | (1u << (mbits - 1)) | pay);
  }
  if (ex == 0) return sign;
  int bias = (1 << (ebits - 1)) - 1;
  int e = ex - 1023;
  if (e >= 1 - bias && e <= bias) {
    int sh = 52 - mbits;
    unsigned long long ab = b & ~(1ull << 63);
    ab += (1ull << (sh - 1)) - 1 + ((ab >> sh) & 1);
    return (unsigned short)(sign | (unsigned short)((ab >> sh) - ((unsigned long long)(1023 - bias) << mbits)));
  }
  unsigned long long m = mant | (1ull << 52);
  int shift = 52 - mbits;
  int subnormal = e < 1 - bias;
  if (subnormal) shift += (1 - bias) - e;
  if (shift > 60) return sign;
  unsigned long long q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  long long bits;
  if (subnormal) bits = (long long)q;
  else bits = ((long long)(e + bias - 1) << mbits) + (long long)q;
  if (bits >= (long long)expmask) bits = expmask;
  return (unsigned short)(sign | (unsigned short)bits);
}
__device__ __forceinline__ long long kl_sat(double d, double lo, double hi_excl, long long ilo, long long ihi) {
  if (d != d) return 0;
  if (d <= lo) return ilo;
  if (d >= hi_excl) return ihi;
  return (long long)d;
}
__device__ __forceinline__ double kl_f16_to_f64(unsigned short h) {
  int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0x1F) v = __longlong_as_double(m ? 0x7FF8000000000000ll : 0x7FF0000000000000ll);
  else if (e == 0) v = __dmul_rn((double)m, 5.960464477539063e-08);
  else v = __longlong_as_double((long long)(((unsigned long long)(e - 15 + 1023) << 52) | ((unsigned long long)m << 42)));
  return s ? -v : v;
}
// element i stored as dtype t (kl_dtype: 0 f32, 1 f64, 2 f16, 3 bf16, 4 i32, 5 i64, 6 u32, 7 u8, 8 i8)
__device__ __forceinline__ void kl_store(unsigned char *out, unsigned long long i, int t, double v) {
  switch (t) {
  case 0: ((float *)out)[i] = __double2float_rn(v); break;
  case 1: ((double *)out)[i] = v; break;
  case 2: ((unsigned short *)out)[i] = kl_round_small(v, 5, 10); break;
  case 3: ((unsigned short *)out)[i] = kl_round_small(v, 8, 7); break;
  case 4: ((int *)out)[i] = (int)kl_sat(v, -2147483648.0, 2147483648.0, -2147483647ll - 1, 2147483647ll); break;
  case 5: ((long long *)out)[i] = kl_sat(v, -9223372036854775808.0, 9223372036854775808.0,
      -9223372036854775807ll - 1, 9223372036854775807ll); break;
  case 6: ((unsigned *)out)[i] = (unsigned)kl_sat(v, 0.0, 4294967296.0, 0, 4294967295ll); break;
  case 7: out[i] = (unsigned char)kl_sat(v, 0.0, 256.0, 0, 255); break;
  default: ((signed char *)out)[i] = (signed char)kl_sat(v, -128.0, 128.0, -128, 127); break;
  }
}
// v as dtype t, read back as a double (a reference's copy of an inout's initial values:
// the task's type first, then the reference's wider one, as kl_buf_convert does)
__device__ __forceinline__ double kl_round_to(double v, int t) {
  switch (t) {
  case 0: return (double)__double2float_rn(v);
  case 2: return kl_f16_to_f64(kl_round_small(v, 5, 10));
  case 3: return (double)__uint_as_float((unsigned)kl_round_small(v, 8, 7) << 16);
  case 4: return (double)(int)kl_sat(v, -2147483648.0, 2147483648.0, -2147483647ll - 1, 2147483647ll);
  case 5: return (double)kl_sat(v, -9223372036854775808.0, 9223372036854775808.0, -9223372036854775807ll - 1,
      9223372036854775807ll);
  case 6: return (double)(unsigned)kl_sat(v, 0.0, 4294967296.0, 0, 4294967295ll);
  case 7: return (double)(unsigned char)kl_sat(v, 0.0, 256.0, 0, 255);
  case 8: return (double)(signed char)kl_sat(v, -128.0, 128.0, -128, 127);
  default: return v;
  }
}
// (end kl_fill)
// n elements of dtype t (round: the dtype each passes through first, or -1), then zeros
// up to `used` bytes (the word padding the host zeroes too)
extern "C" __global__ void kloop_fill(unsigned char *out, unsigned long long n, unsigned long long used, int t,
    int round, int dist, double a, double b, double lo, double span, unsigned long long key) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    double v = kl_fill_value(i, dist, a, b, lo, span, key);
    if (round >= 0) v = kl_round_to(v, round);
    kl_store(out, i, t, v);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long size = (t == 1 || t == 5) ? 8 : (t == 2 || t == 3) ? 2 : (t == 7 || t == 8) ? 1 : 4;
    for (unsigned long long k = n * size; k < used; k++) out[k] = 0;
  }
}
]]

-- The bulk comparison on the GPU (kl_buf_compare in src/kl_buf.c is the same on the
-- host): each block takes a contiguous chunk of elements and writes its sums, counts
-- and firsts (kl_cmp_part); the worker merges the blocks in order. The reference is
-- kept on the device masked word by word with a guard pattern of the run secret
-- (kl_buf_mask); the seed is a launch parameter of this kernel only, so a candidate
-- that finds the reference's memory reads no values there.
M.compare_source = [[
struct kl_cmp_part {
  double err2, ref2, refmax, maxerr, worst_out, worst_ref;
  long long n_unw, first_unw, n_nonfin, first_nonfin, n_bad, first_bad, worst_index;
};
__device__ __forceinline__ unsigned kl_fmix32(unsigned h) {
  h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16; return h;
}
// kl_mask_word of src/kl_buf.c: Philox4x32-10 keyed with the seed, counter = word / 4,
// which gives four words at once (kl_mask4: the comparison unmasks four words a counter)
// (begin kl_mask_word: tests/unit/test_mask.sh compiles this text on the host and
// compares it with kl_buf.c's)
__device__ __forceinline__ void kl_mask4(unsigned long long q, unsigned long long seed, unsigned *m) {
  unsigned c0 = (unsigned)q, c1 = (unsigned)(q >> 32), c2 = 0x6B6C6F6Fu, c3 = 0x6D61736Bu;
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    unsigned long long p0 = (unsigned long long)0xD2511F53u * c0, p1 = (unsigned long long)0xCD9E8D57u * c2;
    unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned)p1; c3 = (unsigned)p0; c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  m[0] = c0; m[1] = c1; m[2] = c2; m[3] = c3;
}
// word i of the mask: word i & 3 of counter i / 4's four
__device__ __forceinline__ unsigned kl_mask_word(unsigned long long i, unsigned long long seed) {
  unsigned m[4];
  kl_mask4(i >> 2, seed, m);
  unsigned q = (unsigned)(i & 3);
  return q == 0 ? m[0] : q == 1 ? m[1] : q == 2 ? m[2] : m[3];
}
// (end kl_mask_word)
__device__ void kl_first(long long &n, long long &first, long long bn, long long bfirst) {
  if (bn && (!n || bfirst < first)) first = bfirst;
  n += bn;
}
__device__ void kl_merge(kl_cmp_part &a, const kl_cmp_part &b) {
  a.err2 += b.err2; a.ref2 += b.ref2; a.refmax = fmax(a.refmax, b.refmax);
  kl_first(a.n_unw, a.first_unw, b.n_unw, b.first_unw);
  kl_first(a.n_nonfin, a.first_nonfin, b.n_nonfin, b.first_nonfin);
  kl_first(a.n_bad, a.first_bad, b.n_bad, b.first_bad);
  if (b.worst_index >= 0 && (a.worst_index < 0 || b.maxerr > a.maxerr ||
      (b.maxerr == a.maxerr && b.worst_index < a.worst_index))) {
    a.maxerr = b.maxerr; a.worst_index = b.worst_index; a.worst_out = b.worst_out; a.worst_ref = b.worst_ref;
  }
}
// one element: the output o (its raw bits) against the reference r
__device__ __forceinline__ void kl_cmp_one(kl_cmp_part &p, unsigned long long i, double o, unsigned long long raw,
    double r, double atol, double rtol, unsigned long long pat, int check_poison) {
  bool rfin = isfinite(r);
  if (rfin) { p.ref2 += r * r; p.refmax = fmax(p.refmax, fabs(r)); }
  if (check_poison && raw == pat) { if (p.n_unw++ == 0) p.first_unw = (long long)i; return; }
  if (!rfin || !isfinite(o)) {
    bool same = !rfin && ((isnan(r) && isnan(o)) || (isinf(r) && o == r));
    if (!same && p.n_nonfin++ == 0) p.first_nonfin = (long long)i;
    return;
  }
  double e = fabs(o - r);
  p.err2 += e * e;
  if (e > atol + rtol * fabs(r) && p.n_bad++ == 0) p.first_bad = (long long)i;
  if (p.worst_index < 0 || e > p.maxerr) { p.maxerr = e; p.worst_index = (long long)i; p.worst_out = o; p.worst_ref = r; }
}
// Each thread takes four elements at a time, in order (chunk, a multiple of 4 as the host splits it): their
// outputs and reference words read 16 bytes at a time where both buffers allow it, and
// one Philox counter unmasks four reference words (a word at a time computed each
// counter four times over: 0.83 ms for 64M elements, round15c). What each part holds does
// not depend on that, but for the order its sums are added in.
extern "C" __global__ void __launch_bounds__(256) kloop_compare(const void *out, int out_f64, const unsigned *ref,
    int ref_f64, unsigned long long n, double atol, double rtol, unsigned long long pat, int check_poison,
    unsigned long long seed, unsigned long long chunk, kl_cmp_part *parts) {
  __shared__ kl_cmp_part sh[256];
  kl_cmp_part p = {0, 0, 0, 0, 0, 0, 0, -1, 0, -1, 0, -1, -1};
  chunk = (chunk + 3) & ~3ull; // (the groups of four, and their mask counters, need it)
  unsigned long long lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  const bool vec = ((((unsigned long long)out) | ((unsigned long long)ref)) & 15) == 0;
  for (unsigned long long g = lo + 4ull * threadIdx.x; g < hi; g += 4ull * blockDim.x) {
    const int cnt = hi - g < 4 ? (int)(hi - g) : 4;
    double o[4], r[4];
    unsigned long long raw[4];
    if (out_f64) {
      const unsigned long long *op = (const unsigned long long *)out + g;
      if (vec && cnt == 4) {
        ulonglong2 a = ((const ulonglong2 *)op)[0], b = ((const ulonglong2 *)op)[1];
        raw[0] = a.x; raw[1] = a.y; raw[2] = b.x; raw[3] = b.y;
      } else {
        for (int k = 0; k < 4; k++) raw[k] = k < cnt ? op[k] : 0;
      }
      for (int k = 0; k < 4; k++) o[k] = __longlong_as_double((long long)raw[k]);
    } else {
      const unsigned *op = (const unsigned *)out + g;
      unsigned w[4];
      if (vec && cnt == 4) {
        uint4 a = ((const uint4 *)op)[0];
        w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
      } else {
        for (int k = 0; k < 4; k++) w[k] = k < cnt ? op[k] : 0;
      }
      for (int k = 0; k < 4; k++) { raw[k] = w[k]; o[k] = (double)__uint_as_float(w[k]); }
    }
    if (ref_f64) {
      // words 2g .. 2g + 7: counters g / 2 and g / 2 + 1 (g is a multiple of 4)
      unsigned m[8], v[8];
      kl_mask4(g >> 1, seed, m);
      kl_mask4((g >> 1) + 1, seed, m + 4);
      const unsigned *rp = ref + 2 * g;
      if (vec && cnt == 4) {
        uint4 a = ((const uint4 *)rp)[0], b = ((const uint4 *)rp)[1];
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
      } else {
        for (int k = 0; k < 8; k++) v[k] = k < 2 * cnt ? rp[k] : 0;
      }
      for (int k = 0; k < 4; k++)
        r[k] = __longlong_as_double((long long)(((unsigned long long)(v[2 * k + 1] ^ m[2 * k + 1]) << 32) |
                                                (v[2 * k] ^ m[2 * k])));
    } else {
      // words g .. g + 3: counter g / 4
      unsigned m[4], v[4];
      kl_mask4(g >> 2, seed, m);
      const unsigned *rp = ref + g;
      if (vec && cnt == 4) {
        uint4 a = ((const uint4 *)rp)[0];
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
      } else {
        for (int k = 0; k < 4; k++) v[k] = k < cnt ? rp[k] : 0;
      }
      for (int k = 0; k < 4; k++) r[k] = (double)__uint_as_float(v[k] ^ m[k]);
    }
    for (int k = 0; k < cnt; k++) kl_cmp_one(p, g + k, o[k], raw[k], r[k], atol, rtol, pat, check_poison);
  }
  sh[threadIdx.x] = p;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) kl_merge(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) parts[blockIdx.x] = sh[0];
  // shared memory outlives the kernel: no partial sum (nor a reference value at the worst
  // element) is left there for a later kernel that reads shared memory it never wrote
  __syncthreads();
  sh[threadIdx.x] = kl_cmp_part{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
}
// The reference masked where it was computed (kl_buf_mask on the device): dst = src ^
// the mask, word by word, so the plain reference never leaves the device
extern "C" __global__ void __launch_bounds__(256) kloop_mask(unsigned *dst, const unsigned *src,
    unsigned long long nwords, unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < nwords; i += (unsigned long long)gridDim.x * 256ull)
    dst[i] = src[i] ^ kl_mask_word(i, seed);
}
]]

-- How long one request may take, and where that figure comes from. A fixed deadline
-- (the run's --deadline, else the task's) wins; otherwise, once the baseline has been
-- timed, it follows from the work: the launches the request makes, each estimated from
-- the baseline's bench time scaled by the cost model, times a generous factor, plus the
-- timing budget and a floor. Before the baseline: 120 s.
M.DEADLINE_FLOOR, M.DEADLINE_FACTOR, M.DEADLINE_FIRST = 5, 4, 120
-- Seconds between two readings of the background compilers while a request waits.
M.PUMP_EVERY = 0.005

function W:deadline(op, timing, screen_timing)
  if self.opts.deadline then return self.opts.deadline, "the run's --deadline" end
  if self.task.deadline then return self.task.deadline, "the task's deadline" end
  local ref = self.work_ref
  if not ref then return M.DEADLINE_FIRST, "the first evaluation's default" end
  local factor = self.opts.deadline_factor or self.task.deadline_factor or M.DEADLINE_FACTOR
  local bench = self:cost(self.task.sizes.bench)
  local function scale(size)
    local c = self:cost(size)
    return math.max(c.flops / math.max(bench.flops, 1), c.bytes / math.max(bench.bytes, 1), 0.01)
  end
  -- verification: every size x (sets + a repeat); timing: at least min_reps, checks included.
  -- A screen verifies one size with one set, and its timing has no budget to spend.
  -- A cascade (both stages in one request) may run the screen's repetitions and the full work.
  local launches = 0
  if op == "screen" then
    launches = scale(self:screen_case().size)
  else
    for _, case in ipairs(taskmod.cases(self.task)) do launches = launches + (self.nsets + 1) * scale(case.size) end
  end
  timing = timing or {}
  local reps = (timing.min_reps or 5) + 3
  if op == "cascade" then reps = reps + ((screen_timing or {}).max_reps or 3) end
  local ncand = op == "compare" and 2 or 1
  if op == "profile" then reps = reps + 4 + 16 end -- activity runs and metric passes
  local work = ncand * (launches + reps) * ref.ms * 1e-3
  local budget = ncand * (op == "screen" and 0 or timing.budget or 2.0)
  local s = M.DEADLINE_FLOOR + factor * work + 2 * budget
  return s, string.format("%.0fx the expected work (%.1f launches at the baseline's %.3f ms) + %.1f s of timing + %d s",
    factor, ncand * (launches + reps), ref.ms, 2 * budget, M.DEADLINE_FLOOR)
end

-- Variables a worker may see: no API keys, nothing of the user's beyond the basics.
M.worker_env = { "PATH", "HOME", "LANG", "LC_", "CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "KLOOP_LUA_DIR",
  "KLOOP_EMBEDDED_ONLY", "KLOOP_CUDA_HOME", "TMPDIR",
  -- profilers (ncu, compute-sanitizer) inject through these
  "LD_PRELOAD", "NV_", "NSIGHT", "NVTX_" }

-- A host worker runs C code nobody read: it sees even less.
M.host_worker_env = { "PATH", "LANG", "LC_", "KLOOP_LUA_DIR", "KLOOP_EMBEDDED_ONLY", "TMPDIR" }

-- opts.worker_prefix: a command the worker runs under (compute-sanitizer and its
-- options: kloop.eval.sanitize); it must keep fds 3/4 open for the worker.
-- opts.worker_argv: the whole command in place of `kloop --worker BACKEND` (a worker on
-- another host: `kloop --worker-remote SOCKET BACKEND`, docs/SCALE.md); the same frames
-- flow through it.
function W:spawn()
  local argv = {}
  for _, a in ipairs(self.opts.worker_prefix or {}) do argv[#argv + 1] = a end
  for _, a in ipairs(self.opts.worker_argv or { sys.exe_path() or "kloop", "--worker", self:backend() }) do
    argv[#argv + 1] = a
  end
  local env_list = self:backend() == "host" and M.host_worker_env or M.worker_env
  local p, err = proc.spawn(argv, env_list)
  if not p then return nil, err end
  self.proc = p
  return true
end

-- The worker's last output (a killed worker's is kept: printf floods, crash messages).
function W:output_tail()
  if not self.proc then return self.last_tail or "" end
  return self.proc:tail()
end

-- Until the worker's reply is ready (or timeout_s after t0), reads the background
-- compilers every M.PUMP_EVERY seconds; returns at once when none is running or queued.
local function wait_pumping(p, t0, timeout_s)
  if not p.ready then return end
  while compile.pump(0) > 0 and not p:ready(M.PUMP_EVERY) and sys.now() - t0 < timeout_s do
    sys.check_interrupt() -- (a compiled trace of this loop would not see the hook)
  end
end

-- One request/reply with a deadline. Returns reply, or nil, kind ("timeout"|"crashed"|"error"), msg.
function W:request(req, timeout_s)
  if self.in_hook then error("a request to the worker from inside a think hook (the worker is busy with another)", 2) end
  local sent, serr = self.proc:send(cjson.encode(req))
  if not sent then
    self:kill()
    return nil, "crashed", serr
  end
  self.sent_count = (self.sent_count or 0) + 1
  if WAITS_LOG then require("kloop.eval.evaluator").waits_log("sent " .. tostring(req.op)) end
  return self:await(req, timeout_s)
end

-- The worker's hello request.
function W:hello_request()
  return { op = "hello", device = self.opts.device or 0, sandbox = self.opts.sandbox,
    device_heap = self.task.device_heap, trace = self.opts.trace }
end

-- The guesses (the first batches' compiles) that run beside a prespawned worker's CUDA
-- start, until its hello (kloop.eval.compile.hold_guesses).
M.START_GUESSES = 4

-- Spawns the worker and sends its hello now, without waiting for the answer, which
-- start_worker reads: the worker's CUDA start then overlaps what the caller does
-- meanwhile (kloop.search.driver: the GPU probe). True, or nil, msg (nothing started).
function W:prespawn(arch_hint)
  if self.proc or self.ready then return true end
  -- (the arch NVML names: kloop's own kernels and the reference compile from now, beside
  -- the worker's CUDA start and the driver's probe)
  if arch_hint and not self.opts.arch then self:begin_compiles(arch_hint) end
  local ok, err = self:spawn()
  if not ok then return nil, err end
  local sent, serr = self.proc:send(cjson.encode(self:hello_request()))
  if not sent then self:kill() return nil, serr end
  self.hello_sent = true
  -- (fewer guesses compile beside the worker's CUDA start, until its hello: start_worker;
  -- a worker killed or closed before it lets them go)
  compile.hold_guesses(M.START_GUESSES)
  return true
end

-- The sliced think to step now (kloop.search.slice): the one armed (on_sent) begun as a
-- job where the driver set slice_think (begin: and the caller may begin it), or the one
-- begun already; nil where there is none, it is done, or this runs inside it (a request
-- its rest makes once fire_think runs it whole waits for its reply, as before slicing).
function W:think_slices(begin)
  if begin and self.on_sent and self.slice_think then
    self.think_job = self.slice_think(self.on_sent)
    self.on_sent = nil
  end
  local job = self.think_job
  if job and not job.done and coroutine.running() ~= job.co then return job end
  return nil
end

-- The reply to req, sent already: W:request's second half.
function W:await(req, timeout_s)
  -- work the caller left for while the worker runs a candidate (the driver's
  -- strategy.think), once; never during a start's hello or setup
  local starting = req.op ~= "hello" and req.op ~= "setup"
  local hook = self.on_sent
  if hook and starting and not self.slice_think then
    self.on_sent = nil
    -- (a hook that sent a request of its own would read this one's reply)
    self.in_hook = true
    local ok, err = pcall(hook)
    self.in_hook = nil
    if not ok then error(err, 0) end
  end
  -- (sliced: kloop.search.slice. It runs below, between reads of the reply, and in the
  -- requests after this one until it is done; the driver settles no result of the batch
  -- meanwhile)
  local job = self:think_slices(starting)
  if job and self.proc and self.proc.ready and not (self.cooperative and coroutine.running()) then
    -- a slice of the think at a time, the reply looked for between them: a reply sent
    -- meanwhile waits at most one slice, and the next request goes out at once
    self.in_hook = true
    local ok, err = pcall(function()
      while not self.proc:ready(0) do
        if job:step() then break end
        compile.pump(0)
        sys.check_interrupt() -- (a compiled trace of this loop would not see the hook)
      end
    end)
    self.in_hook = nil
    if not ok then
      -- (as wait_pumping: the request is unanswered, so the worker is stopped and no
      -- later request reads this one's reply)
      self:kill()
      error(err, 0)
    end
  end
  local reply, kind, msg
  if self.cooperative and coroutine.running() then
    -- in a pool (kloop.search.pool): the other workers are served while this one computes
    local t0 = sys.now()
    while self.proc and not self.proc:ready(0) and sys.now() - t0 < timeout_s do coroutine.yield("wait") end
    if not self.proc then return nil, "crashed", "the worker was stopped" end
    reply, kind, msg = self.proc:recv(math.max(0.001, timeout_s - (sys.now() - t0)))
  else
    -- the background compilers are read while the worker computes (a finished one's
    -- binary stored, a queued one started in its slot), not only between requests: a
    -- slot whose compiler is done would otherwise sit idle for the rest of an evaluation
    local t0 = sys.now()
    local waited, werr = pcall(wait_pumping, self.proc, t0, timeout_s)
    if not waited then
      -- (a Ctrl-C served in this Lua loop, or a failing compiler read, leaves the request
      -- unanswered: the worker is stopped, so no later request reads this one's reply)
      self:kill()
      error(werr, 0)
    end
    reply, kind, msg = self.proc:recv(math.max(0.001, timeout_s - (sys.now() - t0)))
  end
  if not reply then
    self:kill()
    if kind == "timeout" then
      return nil, "timeout", string.format("no answer within %.0f s: the worker was killed", timeout_s)
    end
    return nil, "crashed", msg
  end
  local ok, tbl = pcall(cjson.decode, reply)
  if WAITS_LOG and ok and type(tbl) == "table" then
    -- (benches: the reply's arrival and the worker's own seconds on it; bench/request_gaps.py)
    require("kloop.eval.evaluator").waits_log(string.format("reply %s %.5f", tostring(req.op),
      tonumber(tbl.eval_seconds) or -1))
  end
  if not ok then
    -- a Ctrl-C served inside this pcall is not the worker's fault: pass it on
    if sys.is_interrupt(tbl) then error(tbl, 0) end
    sys.check_interrupt()
    self:kill()
    return nil, "error", "unreadable reply from the worker"
  end
  return tbl
end

function W:kill()
  -- (a worker killed before its hello: the guesses it held back compile again)
  if self.hello_sent then compile.hold_guesses(nil) end
  if self.proc then
    self.last_tail = self.proc:tail()
    if self.opts.worker_prefix then
      -- a worker under a sanitizer: the tool (our child) writes its report when the worker
      -- ends, and SIGKILL would lose it (its log buffers with it). Closing the pipes ends
      -- the worker; the tool then exits, or is killed after the grace.
      self.proc:close(self.opts.close_grace_ms or 2000)
    else
      self.proc:kill()
    end
    self.proc = nil
    self.ready = false
    self.hello_sent = nil
  end
end

function W:close()
  if self.hello_sent then compile.hold_guesses(nil) end
  if self.proc then
    self.proc:send(cjson.encode({ op = "quit" }))
    -- (a worker under a sanitizer writes its report as it exits: opts.close_grace_ms)
    self.proc:close(self.opts.close_grace_ms or 2000)
    self.proc = nil
    self.ready = false
    self.hello_sent = nil
  end
end

-- Starts (or restarts) the worker: hello, compile the reference, set the task up, and
-- (CUDA, once per evaluator) measure the ceilings.
function W:start()
  if self.ready then return true end
  local t0 = sys.now()
  local ok, err, kind = self:start_worker()
  self:spend("start", t0)
  return ok, err, kind
end

-- The reference's compile options: its source, name and entries.
function W:reference_compile()
  local ref = self.task.reference
  return ref.baseline and self.task.source or ref.source,
    { name = ref.baseline and util.basename(self.task.kernel) or util.basename(ref.path),
      entries = { ref.entry or self.task.entry } }
end

-- kloop's own kernels, the reference and the candidates precompile asked for compile in
-- the background from the moment the GPU's arch is known: from NVML's hint before the
-- worker is spawned (W:prespawn), from the driver's probe (opts.gpu_hint), else from the
-- worker's hello, so they overlap its start (CUDA's context). Once per arch: a hello
-- that names another arch than the hint has them compiled again for its own.
function W:begin_compiles(arch)
  if self:backend() ~= "cuda" or not arch then return end
  if arch ~= self.compiles_for then
    -- (self.arch is the worker's once its hello has said it; for these jobs, `arch`)
    local own_arch = self.arch
    self.compiles_for, self.arch = arch, arch
    local jobs = {}
    -- (and the ceilings' FMA kernel, which the start's measurement compiles: kloop.eval.peaks)
    for _, k in ipairs(M.own_sources(self.opts.measure_peaks ~= false and self.measured == nil)) do
      jobs[#jobs + 1] = compile.prepare(k.src, { arch = arch, name = k.name })
    end
    compile.run(jobs, { background = true })
    if not self.ref_job and not self.task.reference.none then
      -- (the jobs start_worker waits for; a reference that does not compile is said there)
      local src, o = self:reference_compile()
      compile.run(self:compile_jobs({ source = src, name = o.name, entries = o.entries }),
        { background = true, urgent = true })
    end
    -- (and the task's own kernel at its defaults, where the caller evaluates it first: a
    -- search's baseline, opts.precompile_baseline; it waited for its compile after the start)
    if self.opts.precompile_baseline and self.opts.compile_background ~= false then
      self:queue_compiles({ { source = self.task.source } }, true)
    end
    self.precompiled = nil
    self.arch = own_arch
  end
  -- and the candidates precompile asked for before the worker was up (the first
  -- batches the strategy foresees): beside the reference's compile and the setup
  local pre = self.precompile_at_start
  if pre and self.precompiled ~= pre and self.opts.compile_background ~= false then
    local own_arch = self.arch
    self.arch, self.precompiled = arch, pre
    self:queue_compiles(pre)
    self.arch = own_arch
  end
end

-- kloop's own kernels: {name, source field of M, file name, what it is}
M.OWN_KERNELS = {
  { "flush", "flush_source", "kloop_l2_flush.cu", "L2 flush" },
  { "check", "check_source", "kloop_check_regions.cu", "state-check" },
  { "compare", "compare_source", "kloop_compare.cu", "comparison" } }

-- The sources of kloop's own kernels, as {src, name}: M.OWN_KERNELS and, with_peaks, the
-- ceilings' FMA kernel (kloop.eval.peaks): what a start compiles, and what the build
-- ships (tools/own_kernels.lua).
function M.own_sources(with_peaks)
  local list = {}
  for _, k in ipairs(M.OWN_KERNELS) do list[#list + 1] = { src = M[k[2]], name = k[3] } end
  if with_peaks then list[#list + 1] = { src = require("kloop.eval.peaks").fma_source, name = "fma_peak.cu" } end
  return list
end

function W:start_worker()
  -- (self.start_parts: seconds per step of the last start, for bench/eval_breakdown.lua)
  local parts, tp = {}, sys.now()
  self.start_parts = parts
  local function lap(name) local t = sys.now() parts[name] = (parts[name] or 0) + (t - tp) tp = t end
  local ref = self.task.reference
  local ref_src, ref_opts = self:reference_compile()
  -- (a compile cache that cannot keep a binary: kloop's failure, kept for the driver)
  local function cache_stop(msg)
    self:kill()
    self.cache_failed = msg
    return nil, msg, "cache"
  end
  local function start_compiles(arch) self:begin_compiles(arch) end
  -- (a restart: the arch an earlier hello said, before the probe's)
  start_compiles(self.opts.arch or (self.gpu and self.gpu.arch) or (self.opts.gpu_hint and self.opts.gpu_hint.arch))
  local hello, kind, msg
  local prespawned = self.hello_sent and self.proc
  self.hello_sent = nil
  if prespawned then
    -- (spawned ahead, its hello sent: W:prespawn)
    hello, kind, msg = self:await({ op = "hello" }, 60)
  else
    local ok, err = self:spawn()
    if not ok then return nil, "cannot start a worker: " .. err end
    hello, kind, msg = self:request(self:hello_request(), 60)
  end
  compile.hold_guesses(nil)
  if not hello then return nil, "worker did not start (" .. kind .. "): " .. msg .. "\n" .. self:output_tail() end
  if not hello.ok then self:kill() return nil, hello.error end
  self.gpu = hello.gpu
  lap("spawn and hello")
  start_compiles(self.opts.arch or hello.gpu.arch)
  self.arch = self.opts.arch or hello.gpu.arch
  if not self.ref_job and not ref.none then
    -- (sizes compiled in: the reference gets each case's size defines too, one binary per case)
    local built = self:compile_all(ref_src, ref_opts)
    for _, b in ipairs(built) do
      if b.job.cache_error then return cache_stop(b.job.cache_error) end
      if not b.job.ok then
        self:kill()
        return nil, "the reference does not compile" .. (b.case and (" at " .. self:case_text(b.case)) or "") .. ":\n"
          .. compile.filter_log(b.job.log)
      end
    end
    self.ref_job = built[#built].job
    self.ref_jobs = built[1].case and built or nil
  end
  if not self.task_spec then
    self.task_spec = self:spec()
    -- opts.guards == false: buffers without guard zones, so a sanitizer sees an overrun
    -- by one element (kloop.eval.sanitize; the worker protocol honours spec.guards)
    if self.opts.guards == false then self.task_spec.guards = false end
    -- a C++ reference resolves by its lowered name
    local low = self.ref_job and self.ref_job.lowered or {}
    local spec = self.task_spec
    -- a check function travels as the sidecar's text; the worker compiles it in its sandbox
    spec.reference.none = self.task.reference.none or nil
    if self.task.check then spec.check = { text = self.task.check_text, file = self.task.file } end
    spec.reference.entry = low[spec.reference.entry] or spec.reference.entry
    for _, case in ipairs(spec.cases) do
      local clow = self:ref_case_job(case.label) and self:ref_case_job(case.label).lowered or low
      for _, k in ipairs(case.ref_plan) do k.entry = clow[k.entry] or k.entry end
    end
  end
  lap("reference compile")
  local own = {} -- kloop's own kernels the CUDA worker needs: the L2 flush and the state check
  if self:backend() == "cuda" then
    for _, k in ipairs(M.OWN_KERNELS) do
      local j = compile.compile(M[k[2]], { arch = self.arch, name = k[3] })
      if j.cache_error then return cache_stop(j.cache_error) end
      if not j.ok then
        self:kill()
        return nil, "kloop's " .. k[4] .. " kernel does not compile:\n" .. compile.filter_log(j.log)
      end
      own[k[1]] = j.cubin_path
    end
  end
  lap("kloop's kernels compile")
  local t0 = sys.now()
  local r
  -- ref_cubin: one binary, or (sizes compiled in) {label -> binary}
  local ref_cubin = self.ref_job and self.ref_job.cubin_path
  if self.ref_jobs then
    ref_cubin = {}
    for _, b in ipairs(self.ref_jobs) do ref_cubin[b.case.label] = b.job.cubin_path end
  end
  r, kind, msg = self:request({ op = "setup", spec = self.task_spec, ref_cubin = ref_cubin,
    flush_cubin = own.flush, check_cubin = own.check,
    compare_cubin = self.opts.device_compare ~= false and own.compare or nil }, 900)
  if not r then return nil, "task setup failed (" .. kind .. "): " .. msg end
  if not r.ok then self:kill() return nil, "task setup failed: " .. tostring(r.error) end
  self.setup_seconds = sys.now() - t0
  self.setup_trace = r.worker_trace
  lap("setup")
  self.guards_off = r.guards == false -- the worker says it honoured spec.guards = false
  self.ready = true
  if self:backend() == "cuda" and self.opts.measure_peaks ~= false and self.measured == nil then
    -- measured once per evaluator (and cached on disk per GPU); a failure only costs the
    -- figure: self.measured = false is never measured again, so no candidate pays for it
    local p = require("kloop.eval.peaks").get(self)
    self.measured = p or false
    lap("peaks")
    -- the measurement killed the worker: one restart, without the ceilings
    if not self.proc then self.ready = false return self:start_worker() end
  end
  -- (benches: KLOOP_WAITS_LOG=FILE gets the start's parts too)
  if os.getenv("KLOOP_WAITS_LOG") then
    local names = util.sorted_keys(parts)
    for i, k in ipairs(names) do names[i] = string.format("%s %.3f", k, parts[k]) end
    require("kloop.eval.evaluator").waits_log("start " .. table.concat(names, ", "))
  end
  return true
end

-- The reference's build of one case (sizes compiled in), or nil.
function W:ref_case_job(label)
  for _, b in ipairs(self.ref_jobs or {}) do if b.case.label == label then return b.job end end
  return nil
end

-- Sends a request that runs candidate code; a dead or hung worker becomes a verdict.
function W:run_request(req)
  local deadline, source = self:deadline(req.op, req.timing, req.screen_timing)
  local t0 = sys.now()
  local reply, kind, msg = self:request(req, deadline)
  self:spend("worker", t0)
  if not reply and kind == "timeout" then
    msg = string.format("no answer within %.1f s (deadline: %s): the worker was killed", deadline, source)
  end
  if not reply then
    self.restarts = self.restarts + 1
    local tail = self:output_tail()
    if self.opts.worker_argv and tail:find(require("kloop.worker.remote").LOST_MARK, 1, true) then
      -- a remote worker's host (its MPI rank) failed, not the candidate: retried elsewhere
      return nil, { verdict = "launch_error", infrastructure = true, output_tail = tail,
        reason = "the remote worker was lost (" .. msg .. "): " .. (tail:match("connection lost: ([^\n]*)") or "?") }
    end
    if msg:find("signal 31", 1, true) then
      msg = msg .. ": the sandbox stopped a forbidden system call (exec, fork, sockets, signals to other processes,"
        .. " file writes or metadata changes: docs/SECURITY.md)"
    end
    return nil, { verdict = kind == "timeout" and "timeout" or "crashed", reason = msg,
      output_tail = self:output_tail() }
  end
  if reply.ok == false then
    -- kloop's own worker code failed: say so plainly, and start afresh next time
    self:kill()
    return nil, { verdict = "crashed", reason = "kloop worker error: " .. tostring(reply.error) }
  end
  reply.ok = nil
  if reply.restart then
    -- the worker could not show its state intact after this candidate: it exited
    self:kill()
    self.restarts = self.restarts + 1
  end
  if reply.fatal then
    -- the worker exits after a fatal error; reap it so the next call restarts it
    self:kill()
    self.restarts = self.restarts + 1
  end
  return reply
end

return M
