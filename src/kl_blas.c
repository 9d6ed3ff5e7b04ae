/* kl_blas.c: cuBLAS opened at run time, for a task's library reference time (the
   report's "cuBLAS sgemm" line). Used only in a short-lived child process that made a
   context current with kl_cuda_init (lua/kloop/eval/library.lua); kloop's main process
   never calls it. The handle works on the primary context and the legacy default
   stream, the stream kl_cuda_event_record records on. No cuBLAS header: the few types
   and constants are the documented ABI of cublas_v2.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "kl_internal.h"

typedef int blas_status;                  /* cublasStatus_t; 0 = CUBLAS_STATUS_SUCCESS */
typedef struct blas_context *blas_handle; /* cublasHandle_t */
enum { BLAS_OP_N = 0 };                   /* cublasOperation_t CUBLAS_OP_N */
enum { BLAS_DEFAULT_MATH = 0 };           /* cublasMath_t: fp32 stays fp32 (no TF32) */

static struct {
  void *lib;
  blas_status (*Create)(blas_handle *);
  blas_status (*Destroy)(blas_handle);
  blas_status (*GetVersion)(blas_handle, int *);
  blas_status (*SetMathMode)(blas_handle, int);
  blas_status (*GetMathMode)(blas_handle, int *);
  const char *(*StatusString)(blas_status);
  blas_status (*Sgemm)(blas_handle, int, int, int, int, int, const float *, const float *, int, const float *,
                       int, const float *, float *, int);
} b;
static char load_error[700];
static char loaded_from[600];

static int blas_fail(kl_err *err, blas_status s, const char *what) {
  const char *msg = b.StatusString ? b.StatusString(s) : NULL;
  return kl_fail(err, KL_ECUDA, s, "%s: %s (cuBLAS status %d)", what, msg ? msg : "error", s);
}

/* libcublas from the loader path or the toolkit (its libcublasLt comes from the same
   folder: kl_dlopen_toolkit). */
int kl_blas_load(kl_err *err) {
  if (b.lib) return KL_OK;
  if (load_error[0]) return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  const char *subdirs[] = {"lib64"};
  char path[600];
  void *h = kl_dlopen_toolkit(names, 3, subdirs, 1, path, sizeof path);
  if (!h) {
    snprintf(load_error, sizeof load_error,
             "cuBLAS not found (tried libcublas.so.13/.12 on the loader path and in %s/lib64): "
             "install the CUDA toolkit's cuBLAS or set KLOOP_CUDA_HOME",
             kl_cuda_home());
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  kl_sym syms[] = {
    {(void **)&b.Create, "cublasCreate_v2"},         {(void **)&b.Destroy, "cublasDestroy_v2"},
    {(void **)&b.GetVersion, "cublasGetVersion_v2"}, {(void **)&b.SetMathMode, "cublasSetMathMode"},
    {(void **)&b.GetMathMode, "cublasGetMathMode"},  {(void **)&b.StatusString, "cublasGetStatusString"},
    {(void **)&b.Sgemm, "cublasSgemm_v2"},
  };
  const char *missing = kl_dlsym_all(h, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    snprintf(load_error, sizeof load_error, "%s lacks %s: cuBLAS too old (kloop needs 11 or later)", path,
             missing);
    dlclose(h);
    memset(&b, 0, sizeof b);
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  snprintf(loaded_from, sizeof loaded_from, "%s", path);
  b.lib = h;
  return KL_OK;
}

const char *kl_blas_path(void) { return loaded_from; }

int kl_blas_create(void **handle, int *version, int *math_mode, kl_err *err) {
  if (!handle) return kl_fail(err, KL_EINVAL, 0, "kl_blas_create: handle is NULL");
  *handle = NULL;
  int st = kl_blas_load(err);
  if (st) return st;
  if (!kl_cuda_context())
    return kl_fail(err, KL_EINVAL, 0, "kl_blas_create: no CUDA context (call kl_cuda_init)");
  blas_handle h = NULL;
  blas_status s = b.Create(&h);
  if (s) return blas_fail(err, s, "cublasCreate");
  s = b.SetMathMode(h, BLAS_DEFAULT_MATH);
  int v = 0, mode = -1;
  if (!s) s = b.GetVersion(h, &v);
  if (!s) s = b.GetMathMode(h, &mode);
  if (s) {
    b.Destroy(h);
    return blas_fail(err, s, "cublasSetMathMode");
  }
  if (version) *version = v;
  if (math_mode) *math_mode = mode;
  *handle = h;
  return KL_OK;
}

int kl_blas_destroy(void *handle) {
  if (!handle || !b.lib) return KL_OK;
  return b.Destroy((blas_handle)handle) ? KL_ECUDA : KL_OK;
}

/* Row-major C[m,n] = A[m,k] B[k,n] (alpha 1, beta 0) through column-major cuBLAS:
   C^T = B^T A^T, i.e. sgemm(N, N, n, m, k, B, n, A, k, C, n). Asynchronous. */
int kl_blas_sgemm_rm(void *handle, int m, int n, int k, uint64_t a, uint64_t bm, uint64_t c, kl_err *err) {
  if (!handle || !b.lib) return kl_fail(err, KL_EINVAL, 0, "kl_blas_sgemm_rm: no cuBLAS handle");
  if (m <= 0 || n <= 0 || k <= 0) return kl_fail(err, KL_EINVAL, 0, "kl_blas_sgemm_rm: sizes must be > 0");
  const float one = 1.0f, zero = 0.0f;
  blas_status s =
    b.Sgemm((blas_handle)handle, BLAS_OP_N, BLAS_OP_N, n, m, k, &one, (const float *)(uintptr_t)bm, n,
            (const float *)(uintptr_t)a, k, &zero, (float *)(uintptr_t)c, n);
  if (s) return blas_fail(err, s, "cublasSgemm");
  return KL_OK;
}
