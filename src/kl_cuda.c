/* kl_cuda.c: the CUDA driver API, opened with dlopen so kloop starts without a driver. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kl_internal.h"

/* One table of entry points, filled once. Versioned names are spelled out because
   cuda.h maps the plain names to them with macros that dlsym cannot see. */
static struct {
  void *lib;
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
  CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)(void);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
  CUresult (*MemAllocHost)(void **, size_t);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemGetInfo)(size_t *, size_t *);
  CUresult (*CtxSetLimit)(CUlimit, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void **, void **);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
} d;

static char load_error[400];

static int cu_fail(kl_err *err, CUresult r, const char *what) {
  const char *name = "CUDA_ERROR", *str = "unknown error";
  if (d.GetErrorName) d.GetErrorName(r, &name);
  if (d.GetErrorString) d.GetErrorString(r, &str);
  return kl_fail(err, KL_ECUDA, (int)r, "%s: %s (%s, %d)", what, str, name, (int)r);
}

#define CU(call, what)                                     \
  do {                                                     \
    CUresult r_ = (call);                                  \
    if (r_ != CUDA_SUCCESS) return cu_fail(err, r_, what); \
  } while (0)

int kl_cuda_load(kl_err *err) {
  if (d.lib) return KL_OK;
  if (load_error[0]) return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(load_error, sizeof load_error, "no NVIDIA driver: libcuda.so.1 could not be opened (%s)",
             dlerror());
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  kl_sym syms[] = {
    {(void **)&d.Init, "cuInit"},
    {(void **)&d.DriverGetVersion, "cuDriverGetVersion"},
    {(void **)&d.DeviceGetCount, "cuDeviceGetCount"},
    {(void **)&d.DeviceGet, "cuDeviceGet"},
    {(void **)&d.DeviceGetName, "cuDeviceGetName"},
    {(void **)&d.DeviceGetAttribute, "cuDeviceGetAttribute"},
    {(void **)&d.DeviceTotalMem, "cuDeviceTotalMem_v2"},
    {(void **)&d.DeviceGetUuid, "cuDeviceGetUuid"},
    {(void **)&d.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
    {(void **)&d.CtxSetCurrent, "cuCtxSetCurrent"},
    {(void **)&d.CtxSynchronize, "cuCtxSynchronize"},
    {(void **)&d.GetErrorString, "cuGetErrorString"},
    {(void **)&d.GetErrorName, "cuGetErrorName"},
    {(void **)&d.ModuleLoadData, "cuModuleLoadData"},
    {(void **)&d.ModuleUnload, "cuModuleUnload"},
    {(void **)&d.ModuleGetFunction, "cuModuleGetFunction"},
    {(void **)&d.ModuleGetGlobal, "cuModuleGetGlobal_v2"},
    {(void **)&d.FuncGetAttribute, "cuFuncGetAttribute"},
    {(void **)&d.FuncSetAttribute, "cuFuncSetAttribute"},
    {(void **)&d.MemAlloc, "cuMemAlloc_v2"},
    {(void **)&d.MemFree, "cuMemFree_v2"},
    {(void **)&d.MemcpyHtoD, "cuMemcpyHtoD_v2"},
    {(void **)&d.MemcpyDtoH, "cuMemcpyDtoH_v2"},
    {(void **)&d.MemcpyDtoD, "cuMemcpyDtoD_v2"},
    {(void **)&d.MemsetD32, "cuMemsetD32_v2"},
    {(void **)&d.MemAllocHost, "cuMemAllocHost_v2"},
    {(void **)&d.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
    {(void **)&d.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
    {(void **)&d.MemGetInfo, "cuMemGetInfo_v2"},
    {(void **)&d.CtxSetLimit, "cuCtxSetLimit"},
    {(void **)&d.LaunchKernel, "cuLaunchKernel"},
    {(void **)&d.EventCreate, "cuEventCreate"},
    {(void **)&d.EventRecord, "cuEventRecord"},
    {(void **)&d.EventSynchronize, "cuEventSynchronize"},
  };
  const char *missing = kl_dlsym_all(h, syms, sizeof syms / sizeof syms[0]);
  /* cuEventElapsedTime_v2 where the driver has it, the older name otherwise */
  d.EventElapsedTime = (CUresult(*)(float *, CUevent, CUevent))dlsym(h, "cuEventElapsedTime_v2");
  if (!d.EventElapsedTime)
    d.EventElapsedTime = (CUresult(*)(float *, CUevent, CUevent))dlsym(h, "cuEventElapsedTime");
  if (!missing && !d.EventElapsedTime) missing = "cuEventElapsedTime";
  if (missing) {
    snprintf(load_error, sizeof load_error, "libcuda.so.1 lacks %s: driver too old", missing);
    dlclose(h);
    memset(&d, 0, sizeof d);
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  d.lib = h;
  return KL_OK;
}

static CUcontext ctx;

void *kl_cuda_context(void) { return ctx; }

int kl_cuda_init(int device, kl_err *err) {
  int st = kl_cuda_load(err);
  if (st) return st;
  CUdevice dev;
  CU(d.Init(0), "cuInit");
  CU(d.DeviceGet(&dev, device), "cuDeviceGet");
  CU(d.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CU(d.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  return KL_OK;
}

int kl_cuda_info(int device, kl_gpu_info *info, kl_err *err) {
  int st = kl_cuda_load(err);
  if (st) return st;
  memset(info, 0, sizeof *info);
  CU(d.Init(0), "cuInit");
  CU(d.DriverGetVersion(&info->driver_version), "cuDriverGetVersion");
  CU(d.DeviceGetCount(&info->device_count), "cuDeviceGetCount");
  if (info->device_count == 0) return kl_fail(err, KL_ENOTFOUND, 0, "the driver sees no GPU");
  if (device < 0 || device >= info->device_count)
    return kl_fail(err, KL_EINVAL, 0, "GPU %d does not exist (%d found)", device, info->device_count);
  CUdevice dev;
  CU(d.DeviceGet(&dev, device), "cuDeviceGet");
  CU(d.DeviceGetName(info->name, sizeof info->name, dev), "cuDeviceGetName");
  struct {
    int *out;
    CUdevice_attribute a;
  } attrs[] = {
    {&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
    {&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
    {&info->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
    {&info->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
    {&info->smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
    {&info->smem_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
    {&info->smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
    {&info->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
    {&info->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
    {&info->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
    {&info->mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE},
    {&info->mem_bus_width, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
    {&info->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
    {&info->compute_mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (d.DeviceGetAttribute(attrs[i].out, attrs[i].a, dev) != CUDA_SUCCESS) *attrs[i].out = -1;
  CU(d.DeviceTotalMem(&info->total_mem, dev), "cuDeviceTotalMem");
  CUuuid u;
  if (d.DeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
    const unsigned char *b = (const unsigned char *)u.bytes;
    char *o = info->uuid;
    /* NVML's spelling, so the two can be matched: GPU-8-4-4-4-12 hex digits */
    o += sprintf(o, "GPU-");
    for (int i = 0; i < 16; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
      o += sprintf(o, "%02x", b[i]);
    }
  }
  return KL_OK;
}

int kl_cuda_probe_isolated(int device, kl_gpu_info *info, int timeout_ms, kl_err *err) {
  /* Cheap refusal first: without libcuda there is nothing to fork for. */
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return kl_fail(err, KL_ENOTFOUND, 0, "no NVIDIA driver: libcuda.so.1 not found");
    dlclose(h);
  }
  int fds[2];
  if (pipe(fds) != 0) return kl_fail_errno(err, "pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return kl_fail_errno(err, "fork");
  }
  if (pid == 0) {
    /* Child: the CUDA state dies with it, so the parent stays CUDA-free. */
    close(fds[0]);
    struct {
      kl_gpu_info info;
      kl_err e;
      int st;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.st = kl_cuda_info(device, &msg.info, &msg.e);
    ssize_t w = write(fds[1], &msg, sizeof msg);
    _exit(w == (ssize_t)sizeof msg ? 0 : 1);
  }
  close(fds[1]);
  struct {
    kl_gpu_info info;
    kl_err e;
    int st;
  } msg;
  size_t got = 0;
  int st = KL_OK;
  while (got < sizeof msg) {
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      st = kl_fail(err, KL_ETIMEOUT, 0, "GPU probe did not answer in %d ms", timeout_ms);
      break;
    }
    ssize_t n = read(fds[0], (char *)&msg + got, sizeof msg - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      st = kl_fail(err, KL_ECLOSED, 0, "GPU probe process died");
      break;
    }
    got += (size_t)n;
  }
  close(fds[0]);
  if (st != KL_OK) kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  if (st != KL_OK) return st;
  if (msg.st != KL_OK) {
    if (err) *err = msg.e;
    return msg.st;
  }
  *info = msg.info;
  return KL_OK;
}

int kl_cuda_module_load(const void *image, void **module, kl_err *err) {
  CU(d.ModuleLoadData((CUmodule *)module, image), "cuModuleLoadData");
  return KL_OK;
}

int kl_cuda_module_unload(void *module, kl_err *err) {
  CU(d.ModuleUnload((CUmodule)module), "cuModuleUnload");
  return KL_OK;
}

int kl_cuda_function(void *module, const char *name, void **fn, kl_err *err) {
  CUresult r = d.ModuleGetFunction((CUfunction *)fn, (CUmodule)module, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return kl_fail(err, KL_ENOTFOUND, (int)r,
                   "kernel '%s' not found in the module (is it declared extern \"C\" __global__?)", name);
  if (r != CUDA_SUCCESS) return cu_fail(err, r, "cuModuleGetFunction");
  return KL_OK;
}

int kl_cuda_module_global(void *module, const char *name, uint64_t *dptr, size_t *bytes, kl_err *err) {
  CUdeviceptr p = 0;
  size_t n = 0;
  CUresult r = d.ModuleGetGlobal(&p, &n, (CUmodule)module, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return kl_fail(
      err, KL_ENOTFOUND, (int)r,
      "symbol '%s' not found in the module (declare it at file scope, __constant__ or __device__)", name);
  if (r != CUDA_SUCCESS) return cu_fail(err, r, "cuModuleGetGlobal");
  *dptr = (uint64_t)p;
  *bytes = n;
  return KL_OK;
}

int kl_cuda_func_attrs(void *fn, kl_func_attrs *a, kl_err *err) {
  CUfunction f = (CUfunction)fn;
  CU(d.FuncGetAttribute(&a->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->const_bytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, f), "cuFuncGetAttribute");
  CU(d.FuncGetAttribute(&a->binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f), "cuFuncGetAttribute");
  return KL_OK;
}

int kl_cuda_func_set_dynamic_smem(void *fn, int bytes, kl_err *err) {
  CU(d.FuncSetAttribute((CUfunction)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
     "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  return KL_OK;
}

int kl_cuda_alloc(size_t bytes, uint64_t *dptr, kl_err *err) {
  CUdeviceptr p = 0;
  CU(d.MemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  *dptr = (uint64_t)p;
  return KL_OK;
}

int kl_cuda_free(uint64_t dptr, kl_err *err) {
  CU(d.MemFree((CUdeviceptr)dptr), "cuMemFree");
  return KL_OK;
}

int kl_cuda_h2d(uint64_t dst, const void *src, size_t bytes, kl_err *err) {
  CU(d.MemcpyHtoD((CUdeviceptr)dst, src, bytes), "cuMemcpyHtoD");
  return KL_OK;
}

int kl_cuda_d2h(void *dst, uint64_t src, size_t bytes, kl_err *err) {
  CU(d.MemcpyDtoH(dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoH");
  return KL_OK;
}

int kl_cuda_d2d(uint64_t dst, uint64_t src, size_t bytes, kl_err *err) {
  CU(d.MemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoD");
  return KL_OK;
}

int kl_cuda_host_alloc(size_t bytes, void **p, kl_err *err) {
  CU(d.MemAllocHost(p, bytes), "cuMemAllocHost");
  return KL_OK;
}

int kl_cuda_h2d_async(uint64_t dst, const void *src, size_t bytes, kl_err *err) {
  CU(d.MemcpyHtoDAsync((CUdeviceptr)dst, src, bytes, NULL), "cuMemcpyHtoDAsync");
  return KL_OK;
}

int kl_cuda_d2h_async(void *dst, uint64_t src, size_t bytes, kl_err *err) {
  CU(d.MemcpyDtoHAsync(dst, (CUdeviceptr)src, bytes, NULL), "cuMemcpyDtoHAsync");
  return KL_OK;
}

int kl_cuda_fill32(uint64_t dst, uint32_t value, size_t count, kl_err *err) {
  CU(d.MemsetD32((CUdeviceptr)dst, value, count), "cuMemsetD32");
  return KL_OK;
}

int kl_cuda_launch(void *fn, const unsigned *g, const unsigned *b, unsigned smem, void **params,
                   kl_err *err) {
  CU(d.LaunchKernel((CUfunction)fn, g[0], g[1], g[2], b[0], b[1], b[2], smem, NULL, params, NULL),
     "cuLaunchKernel");
  return KL_OK;
}

int kl_cuda_sync(kl_err *err) {
  CU(d.CtxSynchronize(), "cuCtxSynchronize");
  return KL_OK;
}

int kl_cuda_event_create(void **ev, kl_err *err) {
  CU(d.EventCreate((CUevent *)ev, CU_EVENT_DEFAULT), "cuEventCreate");
  return KL_OK;
}

int kl_cuda_event_record(void *ev, kl_err *err) {
  CU(d.EventRecord((CUevent)ev, NULL), "cuEventRecord");
  return KL_OK;
}

int kl_cuda_event_elapsed_ms(void *start, void *end, float *ms, kl_err *err) {
  CU(d.EventSynchronize((CUevent)end), "cuEventSynchronize");
  CU(d.EventElapsedTime(ms, (CUevent)start, (CUevent)end), "cuEventElapsedTime");
  return KL_OK;
}

int kl_cuda_mem_info(size_t *free_bytes, size_t *total_bytes, kl_err *err) {
  CU(d.MemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
  return KL_OK;
}

int kl_cuda_set_heap_limit(size_t bytes, kl_err *err) {
  CU(d.CtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, bytes), "cuCtxSetLimit(MALLOC_HEAP_SIZE)");
  return KL_OK;
}
