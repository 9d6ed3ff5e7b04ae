/* kl_err.c: filling caller-owned error structs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "kl_internal.h"

int kl_fail(kl_err *err, int status, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
    err->code = code;
  }
  return status;
}

int kl_fail_errno(kl_err *err, const char *fmt, ...) {
  int e = errno;
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg)
      snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(e));
    err->status = KL_ESYS;
    err->code = e;
  }
  return KL_ESYS;
}

void kl_err_clear(kl_err *err) {
  if (err) {
    err->status = KL_OK;
    err->code = 0;
    err->msg[0] = 0;
  }
}
