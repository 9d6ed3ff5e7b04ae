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
/* The context kl_cuda_init made current (NULL before). */
void *kl_cuda_context(void);

#endif
