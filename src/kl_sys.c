/* kl_sys.c: small system helpers (clock, paths, hashing, randomness, toolkit loading, env scrubbing). */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "kl_internal.h"

extern char **environ;

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

/* mkdir -p without a shell: os.execute would run system(), which ignores SIGINT in kloop
   while the child runs, and a Ctrl-C landing then was lost (a run went on forever). */
int kl_mkdir_p(const char *path) {
  if (!path || !*path) return KL_EINVAL;
  char buf[4096];
  size_t n = strlen(path);
  if (n >= sizeof buf) return KL_EINVAL;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return KL_ESYS;
    buf[i] = c;
  }
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? KL_OK : KL_ESYS;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

/* rm -rf without a shell (for the same reason as kl_mkdir_p); a symlink is removed, never
   followed. A path that does not exist is done already. */
int kl_rm_rf(const char *path) {
  if (!path || !*path || strcmp(path, "/") == 0) return KL_EINVAL;
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? KL_OK : KL_ESYS;
  return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? KL_OK : KL_ESYS;
}
void kl_free(void *p) { free(p); }
int kl_getpid(void) { return (int)getpid(); }

int kl_cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

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

/* Libraries a toolkit library opens by name when it first needs them, not through
   DT_NEEDED: NVRTC loads libnvrtc-builtins.so.MAJOR.MINOR at its first compile, CUPTI's
   Profiler Host API libnvperf_host.so at its first call. Where the toolkit's folder is
   not on the loader path (a fresh machine without an ld.so.conf entry for it) those
   lookups fail although the main library opened by full path. So each is opened here,
   by full path, from the folder its library came from: the loader then matches the
   later lookup by name against the SONAME already loaded. A companion missing from
   that folder is left to the library's own search (and its own error). */
static const struct {
  const char *lib;    /* file name prefix of the library opened */
  const char *prefix; /* companion file name, or its prefix when versioned */
  int versioned;      /* 1: prefix + MAJOR.MINOR, MAJOR that of the library when known */
} companions[] = {
  {"libnvrtc.so", "libnvrtc-builtins.so.", 1},
  {"libcupti.so", "libnvperf_host.so", 0},
};

/* "13.0": digits, a dot, digits; major (when not NULL) must be the first number. */
static int version_match(const char *v, const char *major) {
  const char *p = v;
  if (major && *major) {
    size_t n = strlen(major);
    if (strncmp(p, major, n) != 0 || p[n] != '.') return 0;
  }
  if (!(*p >= '0' && *p <= '9')) return 0;
  while (*p >= '0' && *p <= '9') p++;
  if (*p++ != '.') return 0;
  if (!(*p >= '0' && *p <= '9')) return 0;
  while (*p >= '0' && *p <= '9') p++;
  return *p == 0;
}

static void open_companions(void *h, const char *opened) {
  char dir[4096], buf[4096 + 256];
  const char *base = strrchr(opened, '/');
  base = base ? base + 1 : opened;
  if (dlinfo(h, RTLD_DI_ORIGIN, dir) != 0) return;
  for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++) {
    size_t ln = strlen(companions[i].lib);
    if (strncmp(base, companions[i].lib, ln) != 0) continue;
    if (!companions[i].versioned) {
      snprintf(buf, sizeof buf, "%s/%s", dir, companions[i].prefix);
      if (access(buf, R_OK) == 0) dlopen(buf, RTLD_NOW | RTLD_GLOBAL);
      continue;
    }
    /* the library's major version from its name ("libnvrtc.so.13" -> "13"), if any */
    char major[16] = "";
    if (base[ln] == '.')
      snprintf(major, sizeof major, "%.*s", (int)strcspn(base + ln + 1, "."), base + ln + 1);
    DIR *d = opendir(dir);
    if (!d) continue;
    size_t lp = strlen(companions[i].prefix);
    for (struct dirent *e; (e = readdir(d));) {
      if (strncmp(e->d_name, companions[i].prefix, lp) != 0 || !version_match(e->d_name + lp, major))
        continue;
      snprintf(buf, sizeof buf, "%s/%s", dir, e->d_name);
      dlopen(buf, RTLD_NOW | RTLD_GLOBAL);
    }
    closedir(d);
  }
}

void *kl_dlopen_toolkit(const char *const *names, size_t n, const char *const *subdirs, size_t nsub,
                        char *path, size_t pathlen) {
  char buf[4096];
  for (size_t i = 0; i < n; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      char dir[4096];
      if (path && dlinfo(h, RTLD_DI_ORIGIN, dir) == 0) snprintf(path, pathlen, "%s/%s", dir, names[i]);
      else if (path) snprintf(path, pathlen, "%s", names[i]);
      open_companions(h, names[i]);
      return h;
    }
  }
  for (size_t d = 0; d < nsub; d++)
    for (size_t i = 0; i < n; i++) {
      snprintf(buf, sizeof buf, "%s/%s/%s", kl_cuda_home(), subdirs[d], names[i]);
      void *h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
      if (h) {
        if (path) snprintf(path, pathlen, "%s", buf);
        open_companions(h, buf);
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

/* The block the kernel copied the environment into at exec, [*start, *end): what
   /proc/PID/environ shows, whatever setenv/unsetenv did to environ[] since. Fields
   50 and 51 of /proc/self/stat (counted after the parenthesized command name, which
   may itself hold spaces and parentheses). 0 when unknown. */
static int env_block(char **start, char **end) {
  char buf[4096];
  FILE *f = fopen("/proc/self/stat", "re");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long v[49];
  int got = 0;
  p++;
  while (*p && got < 49) {
    while (*p == ' ') p++;
    if (!*p) break;
    char *q;
    v[got++] = strtoull(p, &q, 10);
    if (q == p) { /* the state letter (field 3) is not a number */
      while (*q && *q != ' ') q++;
    }
    p = q;
  }
  if (got < 49 || v[47] == 0 || v[48] <= v[47]) return 0;
  *start = (char *)(uintptr_t)v[47];
  *end = (char *)(uintptr_t)v[48];
  return 1;
}

static int is_entry(const char *s, const char *name, size_t len) {
  return strncmp(s, name, len) == 0 && s[len] == '=';
}

/* Forgets NAME: zeroes the value bytes of every NAME=... string in the exec-time block
   (the only way to change /proc/PID/environ, which unsetenv leaves as it was) and of
   the string environ[] points to now, then unsetenv()s it, so neither getenv, children
   nor readers of /proc see it again. Read the value first: it is gone afterwards.
   Returns the number of strings wiped (0: it was not set), or -1 for a bad name. */
int kl_env_scrub(const char *name) {
  if (!name || !*name || strchr(name, '=')) return -1;
  size_t len = strlen(name);
  int wiped = 0;
  char *start = NULL, *end = NULL;
  if (env_block(&start, &end)) {
    for (char *s = start; s < end;) {
      size_t n = strnlen(s, (size_t)(end - s));
      if (n > len + 1 && is_entry(s, name, len)) {
        memset(s + len + 1, 0, n - len - 1);
        wiped++;
      }
      s += n + 1;
    }
  }
  /* a copy made by setenv/putenv lives outside the block */
  for (char **e = environ; e && *e; e++) {
    if (is_entry(*e, name, len) && !(start && *e >= start && *e < end)) {
      char *v = *e + len + 1;
      size_t n = strlen(v);
      if (n) {
        memset(v, 0, n);
        wiped++;
      }
    }
  }
  unsetenv(name);
  return wiped;
}
