/* kl_own.h: kloop's own kernels as the binary ships them (tools/own_kernels.lua writes the
   table at build time; src/kl_own_none.c is the empty one of the build's first stage).
   Each entry is the binary a run's compile of that source would make, by its content key
   (kloop.eval.compile), and that compile's log. Ends with an entry whose key is NULL. */
#ifndef KL_OWN_H
#define KL_OWN_H
#include <stddef.h>

typedef struct {
  const char *key;
  const unsigned char *cubin;
  size_t cubin_len;
  const char *log;
} kl_own_kernel;

extern const kl_own_kernel kl_own_kernels[];

#endif
