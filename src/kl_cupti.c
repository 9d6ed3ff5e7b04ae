/* kl_cupti.c: CUPTI opened at run time. Two uses, both in the worker and never inside
   a timed region: kernel activity records (start/end of every kernel of a launch plan,
   a cross-check of the event timer) and hardware metrics through the Profiler Host and
   Range Profiler APIs (CUDA 13; the event/metric APIs do not work on cc >= 7.5).
   Metrics are collected with auto ranges (one range per kernel) and kernel replay:
   CUPTI saves and restores device memory and replays each kernel once per pass. */
#define _GNU_SOURCE
#include <cupti_activity.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kl_internal.h"

/* The Profiler Host API's header is C++ only (it includes <string>); these mirror
   its parameter structs, field for field, for the calls kloop makes. */
typedef struct ph_object ph_object;
/* clang-format off */
typedef struct { size_t size; void *priv; int type; const char *chip; const uint8_t *avail; ph_object *host; } ph_init;
typedef struct { size_t size; void *priv; ph_object *host; } ph_deinit;
typedef struct { size_t size; void *priv; ph_object *host; const char *metric; const char *desc;
                 const char *hw_unit; const char *dim_unit; int type; } ph_props;
typedef struct { size_t size; void *priv; ph_object *host; const char **names; size_t n; } ph_add;
typedef struct { size_t size; void *priv; ph_object *host; size_t image_size; } ph_image_size;
typedef struct { size_t size; void *priv; ph_object *host; size_t image_size; uint8_t *image; } ph_image;
typedef struct { size_t size; void *priv; size_t image_size; uint8_t *image; size_t passes; } ph_passes;
typedef struct { size_t size; void *priv; ph_object *host; const uint8_t *data; size_t data_size;
                 size_t range; const char **names; size_t n; double *values; } ph_eval;
/* clang-format on */
enum { PH_RANGE_PROFILER = 0 };
/* structSize as CUPTI computes it: up to the end of the last field, no tail padding */
#define PH_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

static struct {
  void *lib;
  CUptiResult (*GetResultString)(CUptiResult, const char **);
  CUptiResult (*ActRegister)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*ActEnable)(CUpti_ActivityKind);
  CUptiResult (*ActDisable)(CUpti_ActivityKind);
  CUptiResult (*ActFlushAll)(uint32_t);
  CUptiResult (*ActNext)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*ActDropped)(CUcontext, uint32_t, size_t *);
  CUptiResult (*Timestamp)(uint64_t *);
  CUptiResult (*ProfInit)(CUpti_Profiler_Initialize_Params *);
  CUptiResult (*ChipName)(CUpti_Device_GetChipName_Params *);
  CUptiResult (*HostInit)(ph_init *);
  CUptiResult (*HostDeinit)(ph_deinit *);
  CUptiResult (*HostProps)(ph_props *);
  CUptiResult (*HostAdd)(ph_add *);
  CUptiResult (*HostImageSize)(ph_image_size *);
  CUptiResult (*HostImage)(ph_image *);
  CUptiResult (*HostPasses)(ph_passes *);
  CUptiResult (*HostEval)(ph_eval *);
  CUptiResult (*RpEnable)(CUpti_RangeProfiler_Enable_Params *);
  CUptiResult (*RpDisable)(CUpti_RangeProfiler_Disable_Params *);
  CUptiResult (*RpSetConfig)(CUpti_RangeProfiler_SetConfig_Params *);
  CUptiResult (*RpStart)(CUpti_RangeProfiler_Start_Params *);
  CUptiResult (*RpStop)(CUpti_RangeProfiler_Stop_Params *);
  CUptiResult (*RpDecode)(CUpti_RangeProfiler_DecodeData_Params *);
  CUptiResult (*RpDataSize)(CUpti_RangeProfiler_GetCounterDataSize_Params *);
  CUptiResult (*RpDataInit)(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *);
  CUptiResult (*RpDataInfo)(CUpti_RangeProfiler_GetCounterDataInfo_Params *);
} c;
static char load_error[900];
static char loaded_from[600];

static int cupti_fail(kl_err *err, CUptiResult r, const char *what) {
  const char *s = "unknown CUPTI error";
  if (c.GetResultString) c.GetResultString(r, &s);
  /* privileges and unsupported devices mean "no counters here", not a bug */
  int st = (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_NOT_SUPPORTED ||
            r == CUPTI_ERROR_NOT_COMPATIBLE || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED ||
            r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED || r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED)
             ? KL_ENOPERM
             : KL_ECUDA;
  return kl_fail(err, st, (int)r, "%s: %s (CUPTI %d)", what, s, (int)r);
}

/* A zeroed CUPTI parameter struct named v with its structSize set. */
#define PARAMS(type, v)    \
  type v;                  \
  memset(&v, 0, sizeof v); \
  v.structSize = type##_STRUCT_SIZE

#define CP(call, what)                                         \
  do {                                                         \
    CUptiResult r_ = (call);                                   \
    if (r_ != CUPTI_SUCCESS) return cupti_fail(err, r_, what); \
  } while (0)

/* libcupti from the loader path or the toolkit; the Profiler Host API's libnvperf_host.so,
   which CUPTI opens by name, comes from the same folder (kl_dlopen_toolkit). */
int kl_cupti_load(kl_err *err) {
  if (c.lib) return KL_OK;
  if (load_error[0]) return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  const char *names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  const char *subdirs[] = {"lib64", "extras/CUPTI/lib64"};
  char path[600];
  void *h = kl_dlopen_toolkit(names, 3, subdirs, 2, path, sizeof path);
  if (!h) {
    snprintf(load_error, sizeof load_error,
             "CUPTI not found (libcupti.so.13 on the library path or under %s/lib64): "
             "install the CUDA toolkit's CUPTI or set KLOOP_CUDA_HOME",
             kl_cuda_home());
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  kl_sym syms[] = {
    {(void **)&c.GetResultString, "cuptiGetResultString"},
    {(void **)&c.ActRegister, "cuptiActivityRegisterCallbacks"},
    {(void **)&c.ActEnable, "cuptiActivityEnable"},
    {(void **)&c.ActDisable, "cuptiActivityDisable"},
    {(void **)&c.ActFlushAll, "cuptiActivityFlushAll"},
    {(void **)&c.ActNext, "cuptiActivityGetNextRecord"},
    {(void **)&c.ActDropped, "cuptiActivityGetNumDroppedRecords"},
    {(void **)&c.Timestamp, "cuptiGetTimestamp"},
    {(void **)&c.ProfInit, "cuptiProfilerInitialize"},
    {(void **)&c.ChipName, "cuptiDeviceGetChipName"},
    {(void **)&c.HostInit, "cuptiProfilerHostInitialize"},
    {(void **)&c.HostDeinit, "cuptiProfilerHostDeinitialize"},
    {(void **)&c.HostProps, "cuptiProfilerHostGetMetricProperties"},
    {(void **)&c.HostAdd, "cuptiProfilerHostConfigAddMetrics"},
    {(void **)&c.HostImageSize, "cuptiProfilerHostGetConfigImageSize"},
    {(void **)&c.HostImage, "cuptiProfilerHostGetConfigImage"},
    {(void **)&c.HostPasses, "cuptiProfilerHostGetNumOfPasses"},
    {(void **)&c.HostEval, "cuptiProfilerHostEvaluateToGpuValues"},
    {(void **)&c.RpEnable, "cuptiRangeProfilerEnable"},
    {(void **)&c.RpDisable, "cuptiRangeProfilerDisable"},
    {(void **)&c.RpSetConfig, "cuptiRangeProfilerSetConfig"},
    {(void **)&c.RpStart, "cuptiRangeProfilerStart"},
    {(void **)&c.RpStop, "cuptiRangeProfilerStop"},
    {(void **)&c.RpDecode, "cuptiRangeProfilerDecodeData"},
    {(void **)&c.RpDataSize, "cuptiRangeProfilerGetCounterDataSize"},
    {(void **)&c.RpDataInit, "cuptiRangeProfilerCounterDataImageInitialize"},
    {(void **)&c.RpDataInfo, "cuptiRangeProfilerGetCounterDataInfo"},
  };
  const char *missing = kl_dlsym_all(h, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    snprintf(load_error, sizeof load_error,
             "%s lacks %s: kloop needs CUPTI from CUDA 13 or later (Range Profiler API)", path, missing);
    dlclose(h);
    memset(&c, 0, sizeof c);
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  snprintf(loaded_from, sizeof loaded_from, "%s", path);
  c.lib = h;
  return KL_OK;
}

const char *kl_cupti_path(void) { return loaded_from; }

/* ---- Activity: kernel records ---------------------------------------------------- */

enum { ACT_BUF = 1 << 20, ACT_MAX = 16384 };
static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static kl_kernel_rec act_recs[ACT_MAX];
static int act_n, act_registered, act_on, act_timeline;
static size_t act_dropped;

static void CUPTIAPI act_request(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, ACT_BUF);
  *size = *buffer ? ACT_BUF : 0;
  *max_records = 0;
}

static void CUPTIAPI act_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid) {
  (void)size;
  CUpti_Activity *rec = NULL;
  pthread_mutex_lock(&act_mu);
  while (c.ActNext(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY || rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      /* (the timeline: copies and fills too, named by kind; no grid) */
      if (act_n < ACT_MAX) {
        kl_kernel_rec *o = &act_recs[act_n];
        memset(o, 0, sizeof *o);
        if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
          const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
          static const char *kinds[] = {"?",    "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
          o->start_ns = m->start, o->end_ns = m->end, o->correlation = m->correlationId;
          snprintf(o->name, sizeof o->name, "[memcpy %s %llu]", m->copyKind < 11 ? kinds[m->copyKind] : "?",
                   (unsigned long long)m->bytes);
        } else {
          const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
          o->start_ns = m->start, o->end_ns = m->end, o->correlation = m->correlationId;
          snprintf(o->name, sizeof o->name, "[memset %llu]", (unsigned long long)m->bytes);
        }
      }
      act_n++;
      continue;
    }
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    if (act_n < ACT_MAX) {
      kl_kernel_rec *o = &act_recs[act_n];
      o->start_ns = k->start;
      o->end_ns = k->end;
      o->correlation = k->correlationId;
      o->grid[0] = k->gridX, o->grid[1] = k->gridY, o->grid[2] = k->gridZ;
      o->block[0] = k->blockX, o->block[1] = k->blockY, o->block[2] = k->blockZ;
      snprintf(o->name, sizeof o->name, "%s", k->name ? k->name : "?");
    }
    act_n++;
  }
  size_t dropped = 0;
  if (c.ActDropped(ctx, stream, &dropped) == CUPTI_SUCCESS) act_dropped += dropped;
  pthread_mutex_unlock(&act_mu);
  free(buffer);
}

int kl_activity_start(kl_err *err) {
  int st = kl_cupti_load(err);
  if (st) return st;
  if (!act_registered) {
    CP(c.ActRegister(act_request, act_complete), "cuptiActivityRegisterCallbacks");
    act_registered = 1;
  }
  pthread_mutex_lock(&act_mu);
  act_n = 0;
  act_dropped = 0;
  pthread_mutex_unlock(&act_mu);
  CP(c.ActEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  act_on = 1;
  return KL_OK;
}

int kl_activity_timeline(int on, kl_err *err) {
  if (!act_on) return kl_fail(err, KL_EINVAL, 0, "kernel activity was not started");
  if (on) {
    CP(c.ActEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)");
    CP(c.ActEnable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityEnable(MEMSET)");
    act_timeline = 1;
  } else if (act_timeline) {
    act_timeline = 0;
    CP(c.ActDisable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityDisable(MEMCPY)");
    CP(c.ActDisable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityDisable(MEMSET)");
  }
  return KL_OK;
}

uint64_t kl_cupti_now(void) {
  uint64_t t = 0;
  if (c.Timestamp && c.Timestamp(&t) != CUPTI_SUCCESS) t = 0;
  return t;
}

int kl_activity_take(kl_kernel_rec *recs, int max, int *n, int *dropped, kl_err *err) {
  *n = 0;
  *dropped = 0;
  if (!act_on) return kl_fail(err, KL_EINVAL, 0, "kernel activity was not started");
  CUptiResult r = c.ActFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&act_mu);
  int have = act_n < ACT_MAX ? act_n : ACT_MAX;
  int copy = have < max ? have : max;
  if (copy > 0) memcpy(recs, act_recs, (size_t)copy * sizeof *recs);
  *n = act_n;
  *dropped = (int)act_dropped + (act_n > ACT_MAX ? act_n - ACT_MAX : 0);
  act_n = 0;
  act_dropped = 0;
  pthread_mutex_unlock(&act_mu);
  if (r != CUPTI_SUCCESS) return cupti_fail(err, r, "cuptiActivityFlushAll");
  return KL_OK;
}

int kl_activity_stop(kl_kernel_rec *recs, int max, int *n, int *dropped, kl_err *err) {
  int st = kl_activity_take(recs, max, n, dropped, err);
  if (!act_on) return st;
  act_on = 0;
  if (act_timeline) {
    act_timeline = 0;
    c.ActDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    c.ActDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  CUptiResult r = c.ActDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (st) return st;
  if (r != CUPTI_SUCCESS) return cupti_fail(err, r, "cuptiActivityDisable");
  return KL_OK;
}

/* ---- Metrics: Profiler Host + Range Profiler -------------------------------------- */

struct kl_prof {
  ph_object *host;
  char chip[64];
  const char **names; /* copies of the metric names */
  int n;
  uint8_t *config;
  size_t config_size;
  size_t passes;
  CUpti_RangeProfiler_Object *rp;
  uint8_t *data;
  size_t data_size;
  size_t ranges;
  int max_ranges;
  int user_replay;
  size_t next_pass; /* from the last stop, for the next pass's configuration */
  uint16_t next_level;
};

static int profiler_initialized;

static int profiler_init(kl_err *err) {
  if (profiler_initialized) return KL_OK;
  CUpti_Profiler_Initialize_Params p = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
  CP(c.ProfInit(&p), "cuptiProfilerInitialize");
  profiler_initialized = 1;
  return KL_OK;
}

int kl_prof_chip(int device, char *buf, size_t n, kl_err *err) {
  int st = kl_cupti_load(err);
  if (st) return st;
  if ((st = profiler_init(err))) return st;
  PARAMS(CUpti_Device_GetChipName_Params, p);
  p.deviceIndex = (size_t)device;
  CP(c.ChipName(&p), "cuptiDeviceGetChipName");
  snprintf(buf, n, "%s", p.pChipName ? p.pChipName : "");
  return KL_OK;
}

void kl_prof_free(kl_prof *p) {
  if (!p) return;
  if (p->rp) {
    PARAMS(CUpti_RangeProfiler_Disable_Params, d);
    d.pRangeProfilerObject = p->rp;
    c.RpDisable(&d);
  }
  if (p->host) {
    ph_deinit d = {PH_SIZE(ph_deinit, host), NULL, p->host};
    c.HostDeinit(&d);
  }
  for (int i = 0; i < p->n; i++) free((void *)p->names[i]);
  free(p->names);
  free(p->config);
  free(p->data);
  free(p);
}

int kl_prof_new(const char *chip, const char *const *metrics, int n, kl_prof **out, kl_err *err) {
  *out = NULL;
  int st = kl_cupti_load(err);
  if (st) return st;
  if (n <= 0) return kl_fail(err, KL_EINVAL, 0, "no metrics asked for");
  kl_prof *p = calloc(1, sizeof *p);
  if (!p) return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  p->names = calloc((size_t)n, sizeof *p->names);
  if (!p->names) {
    kl_prof_free(p);
    return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    p->names[i] = strdup(metrics[i]);
    if (!p->names[i]) {
      kl_prof_free(p);
      return kl_fail(err, KL_ENOMEM, 0, "out of memory");
    }
    p->n = i + 1;
  }
  /* No counter availability image: reading it (cuptiProfilerGetCounterAvailability) and
     passing it to cuptiProfilerHostInitialize crashed the process inside CUPTI 13.0 on
     an H200 (seen 2026-11-30); the chip name is enough for the chips CUPTI knows. */
  snprintf(p->chip, sizeof p->chip, "%s", chip ? chip : "");
  ph_init hi = {PH_SIZE(ph_init, host), NULL, PH_RANGE_PROFILER, p->chip, NULL, NULL};
  CUptiResult r = c.HostInit(&hi);
  if (r != CUPTI_SUCCESS) {
    kl_prof_free(p);
    return cupti_fail(err, r, "cuptiProfilerHostInitialize (chip name wrong?)");
  }
  p->host = hi.host;
  for (int i = 0; i < n; i++) {
    ph_props pr;
    memset(&pr, 0, sizeof pr);
    pr.size = PH_SIZE(ph_props, type);
    pr.host = p->host;
    pr.metric = p->names[i];
    if (c.HostProps(&pr) != CUPTI_SUCCESS) {
      int rs = kl_fail(err, KL_EINVAL, i,
                       "unknown metric '%s' for chip %s (names as ncu spells them, "
                       "e.g. dram__bytes_read.sum; `ncu --query-metrics` lists them)",
                       p->names[i], p->chip);
      kl_prof_free(p);
      return rs;
    }
  }
  ph_add add = {PH_SIZE(ph_add, n), NULL, p->host, p->names, (size_t)n};
  r = c.HostAdd(&add);
  if (r != CUPTI_SUCCESS) {
    kl_prof_free(p);
    return cupti_fail(err, r, "cuptiProfilerHostConfigAddMetrics");
  }
  ph_image_size is = {PH_SIZE(ph_image_size, image_size), NULL, p->host, 0};
  r = c.HostImageSize(&is);
  if (r != CUPTI_SUCCESS) {
    kl_prof_free(p);
    return cupti_fail(err, r, "cuptiProfilerHostGetConfigImageSize");
  }
  p->config_size = is.image_size;
  p->config = malloc(p->config_size ? p->config_size : 1);
  if (!p->config) {
    kl_prof_free(p);
    return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  }
  ph_image im = {PH_SIZE(ph_image, image), NULL, p->host, p->config_size, p->config};
  r = c.HostImage(&im);
  if (r != CUPTI_SUCCESS) {
    kl_prof_free(p);
    return cupti_fail(err, r, "cuptiProfilerHostGetConfigImage");
  }
  ph_passes ps = {PH_SIZE(ph_passes, passes), NULL, p->config_size, p->config, 0};
  r = c.HostPasses(&ps);
  if (r != CUPTI_SUCCESS) {
    kl_prof_free(p);
    return cupti_fail(err, r, "cuptiProfilerHostGetNumOfPasses");
  }
  p->passes = ps.passes;
  *out = p;
  return KL_OK;
}

int kl_prof_passes(kl_prof *p) { return p ? (int)p->passes : 0; }

static int set_config(kl_prof *p, kl_err *err) {
  PARAMS(CUpti_RangeProfiler_SetConfig_Params, sc);
  sc.pRangeProfilerObject = p->rp;
  sc.configSize = p->config_size;
  sc.pConfig = p->config;
  sc.counterDataImageSize = p->data_size;
  sc.pCounterDataImage = p->data;
  sc.range = CUPTI_AutoRange;
  sc.replayMode = p->user_replay ? CUPTI_UserReplay : CUPTI_KernelReplay;
  sc.maxRangesPerPass = (size_t)p->max_ranges;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = p->next_pass;
  sc.targetNestingLevel = p->next_level;
  CP(c.RpSetConfig(&sc), "cuptiRangeProfilerSetConfig");
  return KL_OK;
}

int kl_prof_enable(kl_prof *p, int max_ranges, int user_replay, kl_err *err) {
  int st = profiler_init(err);
  if (st) return st;
  if (p->rp) return kl_fail(err, KL_EINVAL, 0, "the range profiler is already enabled");
  if (max_ranges < 1) max_ranges = 1;
  p->max_ranges = max_ranges;
  p->user_replay = user_replay != 0;
  PARAMS(CUpti_RangeProfiler_Enable_Params, e);
  e.ctx = (CUcontext)kl_cuda_context();
  CP(c.RpEnable(&e), "cuptiRangeProfilerEnable");
  p->rp = e.pRangeProfilerObject;
  PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, ds);
  ds.pRangeProfilerObject = p->rp;
  ds.pMetricNames = p->names;
  ds.numMetrics = (size_t)p->n;
  ds.maxNumOfRanges = (size_t)max_ranges;
  ds.maxNumRangeTreeNodes = (uint32_t)max_ranges;
  CP(c.RpDataSize(&ds), "cuptiRangeProfilerGetCounterDataSize");
  free(p->data);
  p->data_size = ds.counterDataSize;
  p->data = calloc(1, p->data_size ? p->data_size : 1);
  if (!p->data) return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, di);
  di.pRangeProfilerObject = p->rp;
  di.counterDataSize = p->data_size;
  di.pCounterData = p->data;
  CP(c.RpDataInit(&di), "cuptiRangeProfilerCounterDataImageInitialize");
  p->next_pass = 0;
  p->next_level = 1;
  return set_config(p, err);
}

int kl_prof_start(kl_prof *p, kl_err *err) {
  if (!p->rp) return kl_fail(err, KL_EINVAL, 0, "the range profiler is not enabled");
  PARAMS(CUpti_RangeProfiler_Start_Params, s);
  s.pRangeProfilerObject = p->rp;
  CP(c.RpStart(&s), "cuptiRangeProfilerStart");
  return KL_OK;
}

int kl_prof_stop(kl_prof *p, int *all_passes, kl_err *err) {
  *all_passes = 0;
  if (!p->rp) return kl_fail(err, KL_EINVAL, 0, "the range profiler is not enabled");
  PARAMS(CUpti_RangeProfiler_Stop_Params, s);
  s.pRangeProfilerObject = p->rp;
  CP(c.RpStop(&s), "cuptiRangeProfilerStop");
  *all_passes = s.isAllPassSubmitted != 0;
  p->next_pass = s.passIndex;
  p->next_level = (uint16_t)s.targetNestingLevel;
  return KL_OK;
}

int kl_prof_reconfigure(kl_prof *p, kl_err *err) {
  if (!p->rp) return kl_fail(err, KL_EINVAL, 0, "the range profiler is not enabled");
  return set_config(p, err);
}

int kl_prof_decode(kl_prof *p, int *ranges, int *dropped, kl_err *err) {
  *ranges = 0;
  *dropped = 0;
  if (!p->rp) return kl_fail(err, KL_EINVAL, 0, "the range profiler is not enabled");
  PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
  dd.pRangeProfilerObject = p->rp;
  CP(c.RpDecode(&dd), "cuptiRangeProfilerDecodeData");
  PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, gi);
  gi.pCounterDataImage = p->data;
  gi.counterDataImageSize = p->data_size;
  CP(c.RpDataInfo(&gi), "cuptiRangeProfilerGetCounterDataInfo");
  p->ranges = gi.numTotalRanges;
  *ranges = (int)gi.numTotalRanges;
  *dropped = (int)dd.numOfRangeDropped;
  return KL_OK;
}

int kl_prof_values(kl_prof *p, int range, double *values, kl_err *err) {
  if (range < 0 || (size_t)range >= p->ranges)
    return kl_fail(err, KL_EINVAL, 0, "range %d does not exist (%zu profiled)", range, p->ranges);
  size_t size = PH_SIZE(ph_eval, values);
  ph_eval ev = {size, NULL, p->host, p->data, p->data_size, (size_t)range, p->names, (size_t)p->n, values};
  CP(c.HostEval(&ev), "cuptiProfilerHostEvaluateToGpuValues");
  return KL_OK;
}
