/* kl_host.c: the host backend's C side: loading candidate shared objects, and the
   sandbox a host worker enters before it runs code nobody has read. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kl_internal.h"

int kl_host_load(const char *path, void **handle, kl_err *err) {
  /* RTLD_LOCAL: candidates never see each other's symbols; RTLD_NOW: a missing
     symbol is a load error now, not a crash in the middle of a timed launch. */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return kl_fail(err, KL_ENOTFOUND, 0, "cannot load %s: %s", path, dlerror());
  *handle = h;
  return KL_OK;
}

int kl_host_symbol(void *handle, const char *name, void **fn, kl_err *err) {
  dlerror();
  void *p = dlsym(handle, name);
  if (!p) return kl_fail(err, KL_ENOTFOUND, 0, "function '%s' not found in the candidate (is it static?)", name);
  *fn = p;
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

/* ---- seccomp ------------------------------------------------------------------
   A deny list: the worker itself needs little (read/write on its pipes, open for
   reading, mmap, clock), so everything a candidate could use to escape is refused
   with SIGSYS (the parent reports "forbidden system call"): new processes, exec,
   sockets, tracing, file writes and changes to the file system. Threads stay allowed
   (clone with CLONE_THREAD) so OpenMP-style kernels work. */

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LOAD_ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), KILL

int kl_sandbox_enter(int64_t max_bytes, int cpu_seconds, kl_err *err) {
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

  const unsigned int write_flags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
  struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
    KILL,
    LOAD_NR,
    /* x32 system calls would bypass the numbers below */
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), KILL,
    DENY_NR(__NR_execve), DENY_NR(__NR_execveat), DENY_NR(__NR_fork), DENY_NR(__NR_vfork),
    DENY_NR(__NR_socket), DENY_NR(__NR_socketpair), DENY_NR(__NR_connect), DENY_NR(__NR_bind),
    DENY_NR(__NR_listen), DENY_NR(__NR_accept), DENY_NR(__NR_accept4), DENY_NR(__NR_ptrace),
    DENY_NR(__NR_process_vm_writev), DENY_NR(__NR_process_vm_readv),
    DENY_NR(__NR_unlink), DENY_NR(__NR_unlinkat), DENY_NR(__NR_rename), DENY_NR(__NR_renameat),
    DENY_NR(__NR_renameat2), DENY_NR(__NR_mkdir), DENY_NR(__NR_mkdirat), DENY_NR(__NR_rmdir),
    DENY_NR(__NR_link), DENY_NR(__NR_linkat), DENY_NR(__NR_symlink), DENY_NR(__NR_symlinkat),
    DENY_NR(__NR_chmod), DENY_NR(__NR_fchmodat), DENY_NR(__NR_chown), DENY_NR(__NR_fchownat),
    DENY_NR(__NR_truncate), DENY_NR(__NR_creat), DENY_NR(__NR_mount), DENY_NR(__NR_umount2),
    DENY_NR(__NR_setuid), DENY_NR(__NR_setgid), DENY_NR(__NR_chroot), DENY_NR(__NR_pivot_root),
    DENY_NR(__NR_kill), DENY_NR(__NR_tkill), DENY_NR(__NR_personality), DENY_NR(__NR_prctl),
    DENY_NR(__NR_seccomp), DENY_NR(__NR_bpf), DENY_NR(__NR_io_uring_setup),
    DENY_NR(__NR_openat2), DENY_NR(__NR_open_by_handle_at), DENY_NR(__NR_name_to_handle_at),
    /* clone3 hides its flags in memory: refuse it with ENOSYS so libc falls back to clone */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    /* clone: threads only */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
    LOAD_ARG_LO(0),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
    KILL,
    /* open/openat: read-only */
    LOAD_NR,
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 3),
    LOAD_ARG_LO(1),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, write_flags, 0, 1),
    KILL,
    LOAD_NR,
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 3),
    LOAD_ARG_LO(2),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, write_flags, 0, 1),
    KILL,
    ALLOW,
  };
  struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return kl_fail_errno(err, "prctl(NO_NEW_PRIVS)");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    return kl_fail_errno(err, "seccomp filter refused by the kernel");
  return KL_OK;
}
