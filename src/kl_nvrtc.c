/* kl_nvrtc.c: NVRTC opened at run time; compiles CUDA C++ straight to a cubin. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kl_internal.h"

static struct {
  void *lib;
  nvrtcResult (*Version)(int *, int *);
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                               const char *const *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char *);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char *, const char **);
} n;

static char load_error[600];
static char loaded_from[600];

/* NVRTC is opened, not linked: the binary must start where the toolkit is absent, and
   the toolkit's own folder is tried when the loader path does not have it (with
   libnvrtc-builtins from the same folder: kl_dlopen_toolkit). */
int kl_nvrtc_load(kl_err *err) {
  if (n.lib) return KL_OK;
  if (load_error[0]) return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  const char *subdirs[] = {"lib64"};
  char path[600];
  void *h = kl_dlopen_toolkit(names, 3, subdirs, 1, path, sizeof path);
  if (!h) {
    snprintf(load_error, sizeof load_error,
             "NVRTC not found (tried libnvrtc.so.13/.12 on the loader path and in %s/lib64): "
             "install the CUDA toolkit or set KLOOP_CUDA_HOME",
             kl_cuda_home());
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  kl_sym syms[] = {
    {(void **)&n.Version, "nvrtcVersion"},
    {(void **)&n.GetErrorString, "nvrtcGetErrorString"},
    {(void **)&n.CreateProgram, "nvrtcCreateProgram"},
    {(void **)&n.DestroyProgram, "nvrtcDestroyProgram"},
    {(void **)&n.CompileProgram, "nvrtcCompileProgram"},
    {(void **)&n.GetProgramLogSize, "nvrtcGetProgramLogSize"},
    {(void **)&n.GetProgramLog, "nvrtcGetProgramLog"},
    {(void **)&n.GetCUBINSize, "nvrtcGetCUBINSize"},
    {(void **)&n.GetCUBIN, "nvrtcGetCUBIN"},
    {(void **)&n.AddNameExpression, "nvrtcAddNameExpression"},
    {(void **)&n.GetLoweredName, "nvrtcGetLoweredName"},
  };
  const char *missing = kl_dlsym_all(h, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    snprintf(load_error, sizeof load_error, "NVRTC lacks %s: toolkit too old", missing);
    dlclose(h);
    memset(&n, 0, sizeof n);
    return kl_fail(err, KL_ENOTFOUND, 0, "%s", load_error);
  }
  snprintf(loaded_from, sizeof loaded_from, "%s", path);
  n.lib = h;
  return KL_OK;
}

const char *kl_nvrtc_path(void) { return loaded_from; }

int kl_nvrtc_version(int *major, int *minor, kl_err *err) {
  int st = kl_nvrtc_load(err);
  if (st) return st;
  nvrtcResult r = n.Version(major, minor);
  if (r != NVRTC_SUCCESS) return kl_fail(err, KL_ECOMPILE, r, "nvrtcVersion: %s", n.GetErrorString(r));
  return KL_OK;
}

int kl_nvrtc_compile(const kl_compile_req *req, kl_compile_res *res, kl_err *err) {
  memset(res, 0, sizeof *res);
  int st = kl_nvrtc_load(err);
  if (st) return st;
  double t0 = kl_now();
  nvrtcProgram prog;
  nvrtcResult r = n.CreateProgram(&prog, req->source, req->name ? req->name : "candidate.cu",
                                  req->num_headers, req->header_sources, req->header_names);
  if (r != NVRTC_SUCCESS) return kl_fail(err, KL_ECOMPILE, r, "nvrtcCreateProgram: %s", n.GetErrorString(r));
  for (int i = 0; i < req->num_name_exprs; i++) {
    r = n.AddNameExpression(prog, req->name_exprs[i]);
    if (r != NVRTC_SUCCESS) {
      n.DestroyProgram(&prog);
      return kl_fail(err, KL_ECOMPILE, r, "nvrtcAddNameExpression(%s): %s", req->name_exprs[i],
                     n.GetErrorString(r));
    }
  }
  nvrtcResult cr = n.CompileProgram(prog, req->num_options, req->options);
  size_t logsz = 0;
  if (n.GetProgramLogSize(prog, &logsz) == NVRTC_SUCCESS && logsz > 0) {
    res->log = malloc(logsz + 1);
    if (res->log && n.GetProgramLog(prog, res->log) == NVRTC_SUCCESS) {
      res->log[logsz] = 0;
      res->log_len = strlen(res->log);
    }
  }
  if (cr == NVRTC_SUCCESS) {
    size_t sz = 0;
    r = n.GetCUBINSize(prog, &sz);
    if (r == NVRTC_SUCCESS && sz > 0) {
      res->cubin = malloc(sz);
      if (res->cubin && n.GetCUBIN(prog, res->cubin) == NVRTC_SUCCESS) {
        res->cubin_len = sz;
        res->ok = 1;
      }
    }
    /* The lowered (mangled) names, in the order of the expressions; the strings are
       NVRTC's and die with the program, so they are copied out first. */
    size_t total = 0;
    for (int i = 0; res->ok && i < req->num_name_exprs; i++) {
      const char *low = NULL;
      if (n.GetLoweredName(prog, req->name_exprs[i], &low) != NVRTC_SUCCESS || !low) {
        res->ok = 0;
        break;
      }
      size_t l = strlen(low);
      char *grown = realloc(res->lowered, total + l + 2);
      if (!grown) {
        res->ok = 0;
        break;
      }
      res->lowered = grown;
      memcpy(res->lowered + total, low, l);
      res->lowered[total + l] = '\n';
      total += l + 1;
      res->lowered[total] = 0;
    }
    res->lowered_len = total;
    if (!res->ok) {
      n.DestroyProgram(&prog);
      res->seconds = kl_now() - t0;
      return kl_fail(
        err, KL_ECOMPILE, r,
        "NVRTC produced no cubin: pass a real architecture (--gpu-architecture=sm_XX), not compute_XX");
    }
  }
  n.DestroyProgram(&prog);
  res->seconds = kl_now() - t0;
  kl_err_clear(err);
  return KL_OK; /* a failed compile is a result (ok = 0, log), not an error */
}

/* ---- compile in a child process ------------------------------------------------
   Child writes: int ok, double seconds, u64 log_len, log, u64 cubin_len, cubin,
   u64 lowered_len, lowered. */

static int write_all(int fd, const void *p, size_t len) {
  const char *c = p;
  while (len > 0) {
    ssize_t w = write(fd, c, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    len -= (size_t)w;
  }
  return 0;
}

int kl_compile_start(const kl_compile_req *req, kl_compile_job *job, kl_err *err) {
  int st = kl_nvrtc_load(err); /* loaded before fork, so children share the mapping */
  if (st) return st;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return kl_fail_errno(err, "pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return kl_fail_errno(err, "fork");
  }
  if (pid == 0) {
    close(fds[0]);
    /* A compile bomb may eat memory: cap the child's address space (8 GiB). */
    struct rlimit rl = {8ULL << 30, 8ULL << 30};
    setrlimit(RLIMIT_AS, &rl);
    /* Below the worker and the driver: a compiler takes the CPU they leave idle, never
       the core a worker needs to launch the next kernel or return from a sync. */
    if (req->nice > 0) (void)!nice(req->nice); /* relative to the parent's, capped at 19 */
    kl_compile_res res;
    kl_err e;
    kl_err_clear(&e);
    int s = kl_nvrtc_compile(req, &res, &e);
    int ok = (s == KL_OK && res.ok) ? 1 : 0;
    uint64_t ll = res.log_len, cl = res.cubin_len, lw = res.lowered_len;
    const char *log = res.log ? res.log : "";
    if (s != KL_OK && !res.log) {
      log = e.msg;
      ll = strlen(e.msg);
    }
    if (write_all(fds[1], &ok, sizeof ok) || write_all(fds[1], &res.seconds, sizeof res.seconds) ||
        write_all(fds[1], &ll, sizeof ll) || write_all(fds[1], log, ll) ||
        write_all(fds[1], &cl, sizeof cl) || (cl && write_all(fds[1], res.cubin, cl)) ||
        write_all(fds[1], &lw, sizeof lw) || (lw && write_all(fds[1], res.lowered, lw)))
      _exit(1);
    _exit(0);
  }
  close(fds[1]);
  job->pid = pid;
  job->fd = fds[0];
  job->started = kl_now();
  return KL_OK;
}

/* Reads exactly len bytes, giving up at the absolute deadline. */
static int read_until(int fd, void *p, size_t len, double deadline) {
  char *c = p;
  while (len > 0) {
    int ms = (int)((deadline - kl_now()) * 1000.0);
    if (ms < 0) ms = 0;
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return KL_ETIMEOUT;
    ssize_t got = read(fd, c, len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return KL_ECLOSED;
    c += got;
    len -= (size_t)got;
  }
  return KL_OK;
}

int kl_compile_poll(kl_compile_job *job, int wait_ms, kl_compile_res *res, kl_err *err) {
  memset(res, 0, sizeof *res);
  if (job->pid <= 0) return kl_fail(err, KL_EINVAL, 0, "compile job already finished");
  struct pollfd pf = {job->fd, POLLIN, 0};
  int r;
  do r = poll(&pf, 1, wait_ms);
  while (r < 0 && errno == EINTR);
  if (r == 0) return kl_fail(err, KL_ETIMEOUT, 0, "still compiling");
  /* Once the first byte is there, the child writes the rest without pause. */
  double deadline = kl_now() + 30.0;
  int ok = 0;
  uint64_t ll = 0, cl = 0;
  int st = read_until(job->fd, &ok, sizeof ok, deadline);
  if (!st) st = read_until(job->fd, &res->seconds, sizeof res->seconds, deadline);
  if (!st) st = read_until(job->fd, &ll, sizeof ll, deadline);
  if (!st && ll > (1u << 26)) st = KL_EINVAL;
  if (!st) {
    res->log = malloc(ll + 1);
    st = res->log ? read_until(job->fd, res->log, ll, deadline) : KL_ENOMEM;
    if (!st) {
      res->log[ll] = 0;
      res->log_len = ll;
    }
  }
  if (!st) st = read_until(job->fd, &cl, sizeof cl, deadline);
  if (!st && cl > (1u << 30)) st = KL_EINVAL;
  if (!st && cl) {
    res->cubin = malloc(cl);
    st = res->cubin ? read_until(job->fd, res->cubin, cl, deadline) : KL_ENOMEM;
    if (!st) res->cubin_len = cl;
  }
  uint64_t lw = 0;
  if (!st) st = read_until(job->fd, &lw, sizeof lw, deadline);
  if (!st && lw > (1u << 24)) st = KL_EINVAL;
  if (!st && lw) {
    res->lowered = malloc(lw + 1);
    st = res->lowered ? read_until(job->fd, res->lowered, lw, deadline) : KL_ENOMEM;
    if (!st) {
      res->lowered[lw] = 0;
      res->lowered_len = lw;
    }
  }
  int status = 0;
  kl_compile_kill(job); /* reaps; harmless when the child already exited */
  (void)status;
  if (st) {
    free(res->log);
    free(res->cubin);
    free(res->lowered);
    memset(res, 0, sizeof *res);
    return kl_fail(err, KL_ECLOSED, 0, "the compiler process died (crash or out of memory)");
  }
  res->ok = ok;
  return KL_OK;
}

int kl_compile_renice(const kl_compile_job *job, int nice) {
  if (job->pid <= 0) return -1;
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  if (base == -1 && errno != 0) return -1;
  int want = base + (nice < 0 ? 0 : nice);
  if (want > 19) want = 19;
  return setpriority(PRIO_PROCESS, (id_t)job->pid, want) == 0 ? 0 : -1;
}

void kl_compile_kill(kl_compile_job *job) {
  if (job->pid > 0) {
    kill(job->pid, SIGKILL);
    while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR) {}
    job->pid = 0;
  }
  if (job->fd >= 0) {
    close(job->fd);
    job->fd = -1;
  }
}
