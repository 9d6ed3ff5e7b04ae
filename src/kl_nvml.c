/* kl_nvml.c: NVML opened at run time: SM/memory clocks, temperature, power and
   throttle reasons, read around timings (absent driver or NVML: a clear error). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "kl_internal.h"

/* The few NVML entry points used, declared here: the toolkit ships no nvml.h. */
typedef void *nvml_dev;
static struct {
  void *lib;
  int (*Init)(void);
  const char *(*ErrorString)(int);
  int (*ByUUID)(const char *, nvml_dev *);
  int (*ByIndex)(unsigned, nvml_dev *);
  int (*ClockInfo)(nvml_dev, int, unsigned *);
  int (*Temperature)(nvml_dev, int, unsigned *);
  int (*Power)(nvml_dev, unsigned *);
  int (*Reasons)(nvml_dev, unsigned long long *);
  int (*Capability)(nvml_dev, int *, int *);
} n;
static char load_error[300];

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

static int nvml_load(kl_err *err) {
  if (n.lib) return KL_OK;
  if (load_error[0]) return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(load_error, sizeof load_error, "NVML not available (libnvidia-ml.so.1: %s)", dlerror());
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  n.Init = (int (*)(void))dlsym(h, "nvmlInit_v2");
  n.ErrorString = (const char *(*)(int))dlsym(h, "nvmlErrorString");
  n.ByUUID = (int (*)(const char *, nvml_dev *))dlsym(h, "nvmlDeviceGetHandleByUUID");
  n.ByIndex = (int (*)(unsigned, nvml_dev *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  n.ClockInfo = (int (*)(nvml_dev, int, unsigned *))dlsym(h, "nvmlDeviceGetClockInfo");
  n.Temperature = (int (*)(nvml_dev, int, unsigned *))dlsym(h, "nvmlDeviceGetTemperature");
  n.Power = (int (*)(nvml_dev, unsigned *))dlsym(h, "nvmlDeviceGetPowerUsage");
  n.Reasons = (int (*)(nvml_dev, unsigned long long *))dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons");
  n.Capability = (int (*)(nvml_dev, int *, int *))dlsym(h, "nvmlDeviceGetCudaComputeCapability");
  if (!n.Reasons)
    n.Reasons =
      (int (*)(nvml_dev, unsigned long long *))dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!n.Init || !n.ByIndex || !n.ClockInfo) {
    snprintf(load_error, sizeof load_error, "libnvidia-ml.so.1 lacks the functions kloop needs");
    dlclose(h);
    memset(&n, 0, sizeof n);
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  int r = n.Init();
  if (r != 0) {
    snprintf(load_error, sizeof load_error, "nvmlInit failed: %s", n.ErrorString ? n.ErrorString(r) : "?");
    dlclose(h);
    memset(&n, 0, sizeof n);
    return kl_fail(err, KL_ENOTFOUND, r, "%s", load_error);
  }
  n.lib = h;
  return KL_OK;
}

int kl_nvml_sample(const char *uuid, int index, kl_gpu_sample *s, kl_err *err) {
  memset(s, 0, sizeof *s);
  int st = nvml_load(err);
  if (st) return st;
  /* the handle of the last GPU sampled, kept: a worker samples one GPU around every
     timing, and the lookup by UUID is a good part of a sample's time */
  static char last_uuid[128];
  static int last_index = -1;
  static nvml_dev last_dev;
  const char *u = uuid ? uuid : "";
  nvml_dev d = NULL;
  if (last_dev && last_index == index && strcmp(last_uuid, u) == 0) {
    d = last_dev;
  } else {
    /* by UUID first: CUDA's device order need not be NVML's */
    int r = (u[0] && n.ByUUID) ? n.ByUUID(u, &d) : -1;
    if (r != 0) r = n.ByIndex((unsigned)index, &d);
    if (r != 0) return kl_fail(err, KL_ENOTFOUND, r, "NVML does not know this GPU: %s", n.ErrorString(r));
    if (strlen(u) < sizeof last_uuid) {
      snprintf(last_uuid, sizeof last_uuid, "%s", u);
      last_index = index;
      last_dev = d;
    }
  }
  if (n.ClockInfo(d, NVML_CLOCK_SM, &s->sm_mhz) != 0) s->sm_mhz = 0;
  if (n.ClockInfo(d, NVML_CLOCK_MEM, &s->mem_mhz) != 0) s->mem_mhz = 0;
  if (!n.Temperature || n.Temperature(d, NVML_TEMPERATURE_GPU, &s->temp_c) != 0) s->temp_c = 0;
  if (!n.Power || n.Power(d, &s->power_mw) != 0) s->power_mw = 0;
  if (!n.Reasons || n.Reasons(d, &s->throttle) != 0) s->throttle = 0;
  return KL_OK;
}

int kl_nvml_compute_capability(int index, int *major, int *minor, kl_err *err) {
  *major = *minor = 0;
  int st = nvml_load(err);
  if (st) return st;
  if (!n.Capability) return kl_fail(err, KL_ENOTFOUND, 0, "this NVML cannot name a compute capability");
  nvml_dev d = NULL;
  int r = n.ByIndex((unsigned)index, &d);
  if (r != 0) return kl_fail(err, KL_ENOTFOUND, r, "NVML has no GPU %d: %s", index, n.ErrorString(r));
  r = n.Capability(d, major, minor);
  if (r != 0) return kl_fail(err, KL_ENOTFOUND, r, "NVML names no compute capability: %s", n.ErrorString(r));
  return KL_OK;
}
