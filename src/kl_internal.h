/* kl_internal.h: helpers shared by the C core; never seen by the FFI. */
#ifndef KL_INTERNAL_H
#define KL_INTERNAL_H
#include "kloop.h"

#if defined(__GNUC__)
#define KL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KL_PRINTF(a, b)
#endif

/* Fills err (when not NULL) and returns status, so callers write `return kl_fail(...)`. */
int kl_fail(kl_err *err, int status, int code, const char *fmt, ...) KL_PRINTF(4, 5);
/* Same, with strerror(errno) appended and errno stored as the code. */
int kl_fail_errno(kl_err *err, const char *fmt, ...) KL_PRINTF(2, 3);
void kl_err_clear(kl_err *err);
/* Run-time loading of NVIDIA libraries. kl_dlopen_toolkit opens the first of names
   found on the loader path, then under each of subdirs of kl_cuda_home() ("lib64", ...);
   path (when not NULL) gets what opened. kl_dlsym_all fills every slot and returns
   NULL, or the first name it could not find. */
void *kl_dlopen_toolkit(const char *const *names, size_t n, const char *const *subdirs, size_t nsub,
                        char *path, size_t pathlen);
typedef struct kl_sym {
  void **slot;
  const char *name;
} kl_sym;
const char *kl_dlsym_all(void *h, const kl_sym *syms, size_t n);
/* The context kl_cuda_init made current (NULL before). */
void *kl_cuda_context(void);

#endif
