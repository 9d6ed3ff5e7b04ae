/* kl_sys.c: small system helpers (clock, paths, hashing, randomness). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "kl_internal.h"

double kl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int kl_exe_path(char *buf, size_t n) {
  if (!buf || n < 2) return KL_EINVAL;
  ssize_t r = readlink("/proc/self/exe", buf, n - 1);
  if (r < 0) return KL_ESYS;
  buf[r] = 0;
  return KL_OK;
}

int kl_isatty(int fd) { return isatty(fd); }
int kl_file_readable(const char *path) { return path && access(path, R_OK) == 0; }
int kl_dir_writable(const char *path) { return path && access(path, W_OK | X_OK) == 0; }
void kl_free(void *p) { free(p); }
int kl_getpid(void) { return (int)getpid(); }

uint64_t kl_hash64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

int kl_random_bytes(void *buf, size_t n) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t r = getrandom(p, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return KL_ESYS;
    }
    p += r;
    n -= (size_t)r;
  }
  return KL_OK;
}

void *kl_dlopen_toolkit(const char *const *names, size_t n, const char *const *subdirs, size_t nsub,
                        char *path, size_t pathlen) {
  char buf[4096];
  for (size_t i = 0; i < n; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      if (path) snprintf(path, pathlen, "%s", names[i]);
      return h;
    }
  }
  for (size_t d = 0; d < nsub; d++)
    for (size_t i = 0; i < n; i++) {
      snprintf(buf, sizeof buf, "%s/%s/%s", kl_cuda_home(), subdirs[d], names[i]);
      void *h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
      if (h) {
        if (path) snprintf(path, pathlen, "%s", buf);
        return h;
      }
    }
  return NULL;
}

const char *kl_dlsym_all(void *h, const kl_sym *syms, size_t n) {
  for (size_t i = 0; i < n; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) return syms[i].name;
  }
  return NULL;
}
