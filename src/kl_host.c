/* kl_host.c: the host backend's C side: loading candidate shared objects, and the
   sandbox a host worker enters before it runs code nobody has read. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <link.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kl_internal.h"

static int confine_reads(const char *first_object, kl_err *err);
static int confine_pending;

int kl_host_load(const char *path, void **handle, kl_err *err) {
  /* The first object is the moment file reads get confined (see kl_sandbox_enter);
     a worker that cannot be confined as it said it would loads nothing. */
  if (confine_pending) {
    int rc = confine_reads(path, err);
    if (rc != KL_OK) return rc;
  }
  /* RTLD_LOCAL: candidates never see each other's symbols; RTLD_NOW: a missing
     symbol is a load error now, not a crash in the middle of a timed launch. */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return kl_fail(err, KL_ENOTFOUND, 0, "cannot load %s: %s", path, dlerror());
  /* An OpenMP candidate brings libgomp, whose pool threads outlive the call: unloading
     it with the candidate would leave them sleeping in unmapped code (SIGSEGV in the
     next evaluation). Once loaded, it stays (RTLD_NOLOAD: only if already loaded). */
  dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  *handle = h;
  return KL_OK;
}

int kl_host_symbol(void *handle, const char *name, void **fn, kl_err *err) {
  dlerror();
  void *p = dlsym(handle, name);
  if (!p)
    return kl_fail(err, KL_ENOTFOUND, 0, "function '%s' not found in the candidate (is it static?)", name);
  *fn = p;
  return KL_OK;
}

int kl_host_global(void *handle, const char *name, void **ptr, size_t *bytes, kl_err *err) {
  dlerror();
  void *p = dlsym(handle, name);
  if (!p)
    return kl_fail(err, KL_ENOTFOUND, 0,
                   "symbol '%s' not found in the candidate (declare it at file scope, not static)", name);
  /* the size the object declares it with, from its ELF symbol entry */
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
    return kl_fail(err, KL_ENOTFOUND, 0, "symbol '%s': its size cannot be read", name);
  if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT)
    return kl_fail(err, KL_EINVAL, 0, "symbol '%s' is not a variable (a function of that name?)", name);
  *ptr = p;
  *bytes = (size_t)sym->st_size;
  return KL_OK;
}

int kl_host_unload(void *handle) { return handle && dlclose(handle) == 0 ? KL_OK : KL_EINVAL; }

void *kl_host_alloc(size_t bytes) {
  void *p = NULL;
  /* 64-byte alignment, like a device allocation is at least 256: vector code may assume it */
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  return p;
}

void kl_host_free(void *p) { free(p); }

/* ---- the sandbox ---------------------------------------------------------------
   A host worker runs C code nobody has read. Before it loads any, it enters three
   layers, each of which holds where the others have gaps:
   - rlimits: address space, CPU time, no core files, no file growth;
   - a seccomp allow-list: the system calls LuaJIT, the protocol on fds 3/4, dlopen,
     malloc, threads and clocks need (found with strace over the suites), a few of them
     only with harmless arguments; anything else kills the process (SIGSYS, which the
     parent reports as a forbidden system call);
   - Landlock, where the kernel has it: file reads confined to the folders the caller
     names plus the folder of the first shared object loaded, writes nowhere, no
     signals or abstract sockets outside the worker. The worker's stripped environment
     does not say where kloop's compile cache is, but the path of the first object
     (the task's reference, sent by the parent) does, so that confinement is applied in
     kl_host_load, before that object's code runs and while the worker has one thread. */

#define KL_BPF_MAX 256

typedef struct bpf_buf {
  struct sock_filter ins[KL_BPF_MAX];
  unsigned n;
  int overflow;
} bpf_buf;

static void emit(bpf_buf *b, unsigned short code, unsigned char jt, unsigned char jf, unsigned int k) {
  if (b->n >= KL_BPF_MAX) {
    b->overflow = 1;
    return;
  }
  b->ins[b->n++] = (struct sock_filter){code, jt, jf, k};
}

#define RET(b, action) emit((b), BPF_RET | BPF_K, 0, 0, (action))
#define LOAD(b, field) emit((b), BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned)(field))
#define ARG_LO(i) offsetof(struct seccomp_data, args[i])
#define ARG_HI(i) (offsetof(struct seccomp_data, args[i]) + 4)
#define KILL_PROC SECCOMP_RET_KILL_PROCESS
#define ERRNO(e) (SECCOMP_RET_ERRNO | (SECCOMP_RET_DATA & (e)))

/* "nr: return action", two instructions; the accumulator keeps the number. */
static void on_nr(bpf_buf *b, int nr, unsigned action) {
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, (unsigned)nr);
  RET(b, action);
}

/* A block that runs only for nr and always returns; the jump over it is patched in
   block_end, so the next test still sees the number in the accumulator. */
static unsigned block_begin(bpf_buf *b, int nr) {
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, (unsigned)nr);
  return b->n - 1;
}

static void block_end(bpf_buf *b, unsigned at) {
  if (b->n - at - 1 > 255) b->overflow = 1;
  else b->ins[at].jf = (unsigned char)(b->n - at - 1);
}

/* nr is allowed when its argument i (the low 32 bits, which is all the kernel reads
   of an int or pid_t) equals v; otherwise the process dies. */
static void arg_equals(bpf_buf *b, int nr, int i, unsigned v) {
  unsigned at = block_begin(b, nr);
  LOAD(b, ARG_LO(i));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, v);
  RET(b, SECCOMP_RET_ALLOW);
  RET(b, KILL_PROC);
  block_end(b, at);
}

/* What the worker and a kernel function need, found by running the host suites under
   `strace -f` (plus the equivalents other glibc versions pick: fstat/statx, the
   clock calls a vDSO usually answers, poll/ppoll). */
/* System call nr is allowed unless argument i (its open flags) has a bit of write_flags. */
static void open_read_only(bpf_buf *b, int nr, int i, unsigned write_flags) {
  unsigned at = block_begin(b, nr);
  LOAD(b, ARG_LO(i));
  emit(b, BPF_JMP | BPF_JSET | BPF_K, 0, 1, write_flags);
  RET(b, KILL_PROC);
  RET(b, SECCOMP_RET_ALLOW);
  block_end(b, at);
}

/* clang-format off */
static const int allowed_nr[] = {
  /* the protocol, stdio, dlopen */
  __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_lseek, __NR_close,
  __NR_fstat, __NR_newfstatat, __NR_statx, __NR_poll, __NR_ppoll,
  /* memory */
  __NR_mmap, __NR_munmap, __NR_mremap, __NR_mprotect, __NR_brk,
  /* signals of its own (abort, the SIGPIPE guard of kl_chan_send) */
  __NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_rt_sigpending,
  __NR_rt_sigtimedwait, __NR_sigaltstack, __NR_restart_syscall,
  /* threads */
  __NR_futex, __NR_set_robust_list, __NR_rseq, __NR_sched_yield, __NR_sched_getaffinity,
  /* identity, randomness, clocks, limits (reading) */
  __NR_getpid, __NR_getppid, __NR_gettid, __NR_getuid, __NR_geteuid, __NR_getgid, __NR_getegid,
  __NR_getrandom, __NR_clock_gettime, __NR_clock_getres, __NR_clock_nanosleep, __NR_nanosleep,
  __NR_gettimeofday, __NR_time, __NR_getrusage, __NR_getrlimit,
  __NR_exit, __NR_exit_group,
  /* the confinement of file reads at the first load; a candidate can only narrow it */
  __NR_landlock_create_ruleset, __NR_landlock_add_rule, __NR_landlock_restrict_self,
};
/* clang-format on */

static int build_filter(bpf_buf *b, pid_t self) {
  const unsigned write_flags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
  /* Namespaces, tracing and vfork have no place in a thread. */
  const unsigned bad_clone = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                             CLONE_NEWPID | CLONE_NEWNET | CLONE_PTRACE | CLONE_VFORK | CLONE_UNTRACED;
  unsigned at;
  b->n = 0;
  b->overflow = 0;
  LOAD(b, offsetof(struct seccomp_data, arch));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
  RET(b, KILL_PROC);
  LOAD(b, offsetof(struct seccomp_data, nr));
  /* x32 system calls (bit 30) would bypass every number below */
  emit(b, BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x40000000u);
  RET(b, KILL_PROC);
  for (size_t i = 0; i < sizeof allowed_nr / sizeof allowed_nr[0]; i++)
    on_nr(b, allowed_nr[i], SECCOMP_RET_ALLOW);

  /* clone3 hides its flags in memory: ENOSYS, and libc falls back to clone */
  on_nr(b, __NR_clone3, ERRNO(ENOSYS));
  /* clone: threads only */
  at = block_begin(b, __NR_clone);
  LOAD(b, ARG_LO(0));
  emit(b, BPF_JMP | BPF_JSET | BPF_K, 2, 0, bad_clone);
  emit(b, BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_THREAD);
  RET(b, SECCOMP_RET_ALLOW);
  RET(b, KILL_PROC);
  block_end(b, at);
  /* open/openat: reading only (Landlock says where) */
  open_read_only(b, __NR_open, 1, write_flags);
  open_read_only(b, __NR_openat, 2, write_flags);
  /* signals: to this process only (abort and raise use tgkill on themselves); the pid
     is built into the filter, since the worker never forks */
  arg_equals(b, __NR_tgkill, 0, (unsigned)self);
  arg_equals(b, __NR_tkill, 0, (unsigned)self);
  arg_equals(b, __NR_kill, 0, (unsigned)self);
  /* ioctl: isatty's probe learns "not a terminal"; everything else (TIOCSTI pushing
     keystrokes into a terminal, FIOASYNC/FIOSETOWN signalling another process) kills */
  at = block_begin(b, __NR_ioctl);
  LOAD(b, ARG_LO(1));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, TIOCSTI);
  RET(b, KILL_PROC);
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, TCGETS);
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, TIOCGWINSZ);
  RET(b, ERRNO(ENOTTY));
  RET(b, KILL_PROC);
  block_end(b, at);
  /* fcntl: descriptor flags and duplication; F_SETOWN/F_SETSIG (a signal to another
     process on I/O), leases, notifications and locks kill */
  at = block_begin(b, __NR_fcntl);
  LOAD(b, ARG_LO(1));
  emit(b, BPF_JMP | BPF_JGE | BPF_K, 1, 0, F_SETFL + 1);
  RET(b, SECCOMP_RET_ALLOW); /* F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL */
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, F_DUPFD_CLOEXEC);
  RET(b, SECCOMP_RET_ALLOW);
  RET(b, KILL_PROC);
  block_end(b, at);
  /* prlimit64: reading this process's limits; setting them (root may raise the hard
     limits above) or touching another process's kills */
  at = block_begin(b, __NR_prlimit64);
  LOAD(b, ARG_LO(0));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 5, 0);
  LOAD(b, ARG_LO(2));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0);
  LOAD(b, ARG_HI(2));
  emit(b, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
  RET(b, SECCOMP_RET_ALLOW);
  RET(b, KILL_PROC);
  block_end(b, at);
  /* madvise: the ordinary advice (malloc and thread stacks give memory back);
     MADV_HWPOISON and MADV_SOFT_OFFLINE (100, 101) take physical pages off the
     machine for a root worker */
  at = block_begin(b, __NR_madvise);
  LOAD(b, ARG_LO(2));
  emit(b, BPF_JMP | BPF_JGE | BPF_K, 0, 1, MADV_HWPOISON);
  RET(b, KILL_PROC);
  RET(b, SECCOMP_RET_ALLOW);
  block_end(b, at);
  RET(b, KILL_PROC);
  return b->overflow ? -1 : 0;
}

/* ---- Landlock ---- */

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define KL_LL_NET_BIND_TCP (1ULL << 0)
#define KL_LL_NET_CONNECT_TCP (1ULL << 1)
#define KL_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define KL_LL_SCOPE_SIGNAL (1ULL << 1)

/* The ruleset attribute as of ABI 6; older kernels are given a shorter size. The
   system header may predate the later fields. */
struct kl_ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

static struct {
  int abi;
  char dirs[4096]; /* NUL-separated, ended by an empty name */
} confine;

static long ll_create(const void *attr, size_t size, uint32_t flags) {
  return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

/* Every file-system access this ABI knows: handled means denied unless a rule allows. */
static uint64_t ll_fs_rights(int abi) {
  uint64_t r = (1ULL << 13) - 1; /* ABI 1: execute ... make_sym */
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

static int ll_allow(int ruleset, const char *path, int must_exist, kl_err *err) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (!must_exist && (errno == ENOENT || errno == ENOTDIR)) return KL_OK;
    return kl_fail_errno(err, "sandbox: cannot open %s to allow reads beneath it", path);
  }
  struct stat st;
  uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) read |= LANDLOCK_ACCESS_FS_READ_DIR;
  struct landlock_path_beneath_attr pb = {.allowed_access = read, .parent_fd = fd};
  long rc = syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
  int e = errno;
  close(fd);
  if (rc != 0) {
    errno = e;
    return kl_fail_errno(err, "sandbox: Landlock refused a rule for %s", path);
  }
  return KL_OK;
}

/* Reads beneath confine.dirs and the folder of first_object, nothing written anywhere,
   no signals or abstract sockets outside the worker; for this thread and what it
   starts (the worker has no other thread yet). */
static int confine_reads(const char *first_object, kl_err *err) {
  char folder[4096];
  const char *slash = strrchr(first_object, '/');
  if (!slash) snprintf(folder, sizeof folder, ".");
  else if (slash == first_object) snprintf(folder, sizeof folder, "/");
  else if ((size_t)(slash - first_object) >= sizeof folder)
    return kl_fail(err, KL_EINVAL, 0, "sandbox: path too long: %s", first_object);
  else snprintf(folder, sizeof folder, "%.*s", (int)(slash - first_object), first_object);

  struct kl_ll_ruleset_attr attr = {.handled_access_fs = ll_fs_rights(confine.abi)};
  size_t size = sizeof attr.handled_access_fs;
  if (confine.abi >= 4) {
    attr.handled_access_net = KL_LL_NET_BIND_TCP | KL_LL_NET_CONNECT_TCP;
    size = offsetof(struct kl_ll_ruleset_attr, scoped);
  }
  if (confine.abi >= 6) {
    attr.scoped = KL_LL_SCOPE_ABSTRACT_UNIX_SOCKET | KL_LL_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int rs = (int)ll_create(&attr, size, 0);
  if (rs < 0) return kl_fail_errno(err, "sandbox: cannot create a Landlock ruleset");
  int rc = ll_allow(rs, folder, 1, err);
  for (const char *d = confine.dirs; rc == KL_OK && *d; d += strlen(d) + 1) rc = ll_allow(rs, d, 0, err);
  if (rc == KL_OK && syscall(__NR_landlock_restrict_self, rs, 0) != 0)
    rc = kl_fail_errno(err, "sandbox: Landlock refused to confine the worker");
  close(rs);
  if (rc == KL_OK) confine_pending = 0;
  return rc;
}

int kl_sandbox_enter(int64_t max_bytes, int cpu_seconds, const char *read_dirs, int *landlock_abi,
                     kl_err *err) {
  struct rlimit rl;
  if (max_bytes > 0) {
    rl.rlim_cur = rl.rlim_max = (rlim_t)max_bytes;
    if (setrlimit(RLIMIT_AS, &rl) != 0) return kl_fail_errno(err, "setrlimit(RLIMIT_AS)");
  }
  if (cpu_seconds > 0) {
    rl.rlim_cur = (rlim_t)cpu_seconds;
    rl.rlim_max = (rlim_t)cpu_seconds + 5;
    if (setrlimit(RLIMIT_CPU, &rl) != 0) return kl_fail_errno(err, "setrlimit(RLIMIT_CPU)");
  }
  rl.rlim_cur = rl.rlim_max = 0;
  setrlimit(RLIMIT_CORE, &rl);
  setrlimit(RLIMIT_FSIZE, &rl); /* no regular file grows; pipes are not files */

  /* Landlock: probed now (the caller reports what holds), applied at the first load. */
  long abi = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  confine.abi = abi > 0 ? (int)abi : 0;
  if (landlock_abi) *landlock_abi = abi > 0 ? (int)abi : -errno;
  if (read_dirs && confine.abi > 0) {
    size_t len = 0;
    while (read_dirs[len]) len += strlen(read_dirs + len) + 1;
    if (len + 1 > sizeof confine.dirs) return kl_fail(err, KL_EINVAL, 0, "sandbox: folder list too long");
    memcpy(confine.dirs, read_dirs, len + 1);
  }

  bpf_buf b;
  if (build_filter(&b, getpid()) != 0) return kl_fail(err, KL_EINVAL, 0, "sandbox: seccomp filter too long");
  struct sock_fprog prog = {(unsigned short)b.n, b.ins};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return kl_fail_errno(err, "prctl(NO_NEW_PRIVS)");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    return kl_fail_errno(err, "seccomp filter refused by the kernel");
  confine_pending = read_dirs && confine.abi > 0;
  return KL_OK;
}
