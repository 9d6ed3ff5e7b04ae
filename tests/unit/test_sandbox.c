/* test_sandbox.c: unit tests for the host worker's sandbox (kl_sandbox_enter) and a worker's session. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kloop.h"

#ifdef KL_STANDALONE
void kl_free(void *p) { free(p); }
#endif

/*
 * Each case runs in a forked child that enters the sandbox and tries one thing; the
 * parent checks how the child ended: killed by SIGSYS (the filter), or exited with 0
 * (the call behaved as the sandbox says: allowed, or refused with the right errno).
 * Cases never do harm where the sandbox is missing: the targets are the child itself,
 * its own files or arguments the kernel rejects anyway.
 */

#include "kl_check.h"

enum { DIES = 1, RUNS = 2, ABORTS = 3 };

static const char read_dirs[] = "/usr/lib\0/lib\0/lib64\0/etc/ld.so.cache\0";
static char scratch[256]; /* a file of the test's own, made before the sandbox */
static char libm_path[4096];
static int landlock_abi;

static int enter(void) {
  kl_err e;
  int abi = 0;
  if (kl_sandbox_enter(0, 0, read_dirs, &abi, &e) != KL_OK) {
    fprintf(stderr, "kl_sandbox_enter: %s\n", e.msg);
    return -1;
  }
  return 0;
}

/* The first load confines file reads (Landlock) to read_dirs and libm's folder. */
static int enter_and_load(void) {
  if (enter() != 0) return -1;
  void *h;
  kl_err e;
  if (kl_host_load(libm_path, &h, &e) != KL_OK) {
    fprintf(stderr, "kl_host_load: %s\n", e.msg);
    return -1;
  }
  return 0;
}

static int denied(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return errno == EACCES;
}

static int readable(const char *path) {
  char c;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, &c, 1);
  close(fd);
  return n == 1;
}

static void *thread_body(void *arg) {
  *(int *)arg = 42;
  return NULL;
}

/* ---- cases: each returns 0 when what it tried behaved as expected ---- */

typedef struct sb_case {
  const char *name;
  int expect;
  int (*run)(void);
} sb_case;

static int c_kill_parent(void) { return kill(getppid(), 0) == 0 ? 1 : 2; }
static int c_tgkill_parent(void) { return (int)syscall(SYS_tgkill, getppid(), getppid(), 0) == 0 ? 1 : 2; }
static int c_tkill_parent(void) { return (int)syscall(SYS_tkill, getppid(), 0) == 0 ? 1 : 2; }
static int c_sigqueue_parent(void) {
  union sigval v = {0};
  return sigqueue(getppid(), 0, v) == 0 ? 1 : 2;
}
static int c_tgsigqueue_parent(void) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_code = SI_QUEUE;
  return (int)syscall(SYS_rt_tgsigqueueinfo, getppid(), getppid(), 0, &si) == 0 ? 1 : 2;
}
static int c_pidfd_open(void) { return syscall(SYS_pidfd_open, getppid(), 0) >= 0 ? 1 : 2; }
static int c_pidfd_send_signal(void) { return (int)syscall(SYS_pidfd_send_signal, -1, 0, NULL, 0); }
static int c_ptrace(void) { return (int)syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, getppid(), 0, 0); }
static int c_process_vm_readv(void) {
  char buf[8];
  struct iovec l = {buf, sizeof buf}, r = {buf, sizeof buf};
  return (int)syscall(SYS_process_vm_readv, getppid(), &l, 1, &r, 1, 0);
}
static int c_setpriority_parent(void) { return setpriority(PRIO_PROCESS, (id_t)getppid(), 0); }
static int c_fcntl_setown(void) { return fcntl(1, F_SETOWN, getppid()); }
static int c_fcntl_setsig(void) { return fcntl(1, F_SETSIG, SIGKILL); }
static int c_ioctl_tiocsti(void) { return ioctl(0, TIOCSTI, "x"); }
static int c_ioctl_fioasync(void) {
  int on = 0;
  return ioctl(1, FIOASYNC, &on);
}
static int c_isatty(void) { return !isatty(0) && errno == ENOTTY ? 0 : 1; }

static int own_fd(void) { return open(scratch, O_RDONLY); }
static int c_fchmod(void) { return fchmod(own_fd(), 0600); }
static int c_fchown(void) { return fchown(own_fd(), getuid(), getgid()); }
static int c_fchmodat2(void) { return (int)syscall(452, own_fd(), "", 0600, AT_EMPTY_PATH); }
static int c_utimensat(void) { return utimensat(AT_FDCWD, scratch, NULL, 0); }
static int c_futimens(void) { return futimens(own_fd(), NULL); }
static int c_futimesat(void) { return (int)syscall(SYS_futimesat, AT_FDCWD, scratch, NULL); }
static int c_fsetxattr(void) { return (int)syscall(SYS_fsetxattr, own_fd(), "user.kloop", "1", 1, 0); }
static int c_fallocate(void) { return fallocate(own_fd(), 0, 0, 1); }
static int c_ftruncate(void) { return ftruncate(own_fd(), 0); }
static int c_rename(void) { return rename(scratch, scratch); }
static int c_open_write(void) { return open(scratch, O_WRONLY); }
static int c_openat_create(void) { return openat(AT_FDCWD, scratch, O_RDONLY | O_CREAT, 0600); }
static int c_socket(void) { return (int)syscall(SYS_socket, 1 /* AF_UNIX */, 1, 0); }
static int c_execve(void) {
  char *argv[] = {"/bin/true", NULL};
  return execve("/bin/true", argv, NULL);
}
static int c_fork(void) {
  long r = syscall(SYS_fork);
  if (r == 0) _exit(0); /* only where the filter is missing */
  return 1;
}
static int c_clone_newuser_thread(void) {
  /* the kernel rejects this combination (EINVAL); the filter must stop it first */
  unsigned long flags = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_NEWUSER;
  return (int)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
}
static int c_unshare(void) { return unshare(CLONE_NEWNS); }
static int c_setrlimit(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  return setrlimit(RLIMIT_NOFILE, &rl); /* as root it could raise hard limits */
}
static int c_prlimit_parent(void) {
  struct rlimit rl;
  return (int)syscall(SYS_prlimit64, getppid(), RLIMIT_NOFILE, NULL, &rl);
}
static int c_madvise_hwpoison(void) { return madvise(NULL, 0, 100 /* MADV_HWPOISON, zero length */); }
static int c_prctl(void) { return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }
static int c_getdents(void) {
  char buf[256];
  return (int)syscall(SYS_getdents64, 0, buf, sizeof buf);
}
static int c_x32(void) { return (int)syscall(SYS_getpid | 0x40000000); }

static int c_basics(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || getpid() <= 0 || getppid() <= 0) return 1;
  void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 2;
  memset(p, 1, 1 << 20);
  if (madvise(p, 1 << 20, MADV_DONTNEED) != 0) return 3;
  p = mremap(p, 1 << 20, 2 << 20, MREMAP_MAYMOVE);
  if (p == MAP_FAILED || mprotect(p, 4096, PROT_READ) != 0 || munmap(p, 2 << 20) != 0) return 4;
  free(malloc(64 << 20));
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) != 0) return 5;
  if (fcntl(3, F_GETFD) < 0 && errno != EBADF) return 6;
  struct timespec nap = {0, 1000000};
  if (nanosleep(&nap, NULL) != 0) return 7;
  char r[8];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) return 8;
  if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS) return 9;
  if (!readable("/etc/ld.so.cache")) return 10;
  return 0;
}
static int c_threads(void) {
  pthread_t t[2];
  int v[2] = {0, 0};
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, thread_body, &v[i]) != 0) return 1;
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  return v[0] == 42 && v[1] == 42 ? 0 : 2;
}
static volatile sig_atomic_t got_usr1;
static void on_usr1(int s) { got_usr1 = s; }
static int c_raise_self(void) {
  signal(SIGUSR1, on_usr1);
  raise(SIGUSR1);
  return got_usr1 == SIGUSR1 ? 0 : 1;
}
static int c_abort(void) {
  abort();
  return 1;
}

/* Landlock cases: after the first load. */
static int c_ll_passwd(void) { return denied("/etc/passwd") ? 0 : 1; }
static int c_ll_proc_self(void) { return denied("/proc/self/status") ? 0 : 1; }
static int c_ll_proc_parent(void) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/environ", (int)getppid());
  return denied(p) ? 0 : 1;
}
static int c_ll_own_file(void) { return denied(scratch) ? 0 : 1; }
static int c_ll_cwd(void) { return denied(".") ? 0 : 1; }
static int c_ll_libs(void) {
  /* the folder of the first object and the loader's cache stay readable */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", libm_path);
  *strrchr(dir, '/') = 0;
  int ok = readable(libm_path) && readable("/etc/ld.so.cache") && open(dir, O_RDONLY | O_DIRECTORY) >= 0;
  return ok ? 0 : 1;
}
static const char *fresh_lib; /* a library this process has not loaded, found before the tests */
static int c_ll_load_fresh(void) {
  /* dlopen of a library through the loader's cache, as a candidate's libgomp is */
  return dlopen(fresh_lib, RTLD_NOW | RTLD_LOCAL) ? 0 : 1;
}

/* Picks a library that loads here without the sandbox (tried in a child, so it stays
   unloaded in this process). */
static const char *pick_fresh_lib(void) {
  static const char *const names[] = {"libgomp.so.1", "libquadmath.so.0", "libz.so.1", "libatomic.so.1"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (dlopen(names[i], RTLD_NOW | RTLD_NOLOAD)) continue;
    pid_t pid = fork();
    if (pid == 0) _exit(dlopen(names[i], RTLD_NOW) ? 0 : 1);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return names[i];
  }
  return NULL;
}

static const sb_case cases[] = {
  {"kill(parent)", DIES, c_kill_parent},
  {"tgkill(parent)", DIES, c_tgkill_parent},
  {"tkill(parent)", DIES, c_tkill_parent},
  {"rt_sigqueueinfo(parent)", DIES, c_sigqueue_parent},
  {"rt_tgsigqueueinfo(parent)", DIES, c_tgsigqueue_parent},
  {"pidfd_open(parent)", DIES, c_pidfd_open},
  {"pidfd_send_signal", DIES, c_pidfd_send_signal},
  {"ptrace(ATTACH, parent)", DIES, c_ptrace},
  {"process_vm_readv(parent)", DIES, c_process_vm_readv},
  {"setpriority(parent)", DIES, c_setpriority_parent},
  {"fcntl(F_SETOWN)", DIES, c_fcntl_setown},
  {"fcntl(F_SETSIG)", DIES, c_fcntl_setsig},
  {"ioctl(TIOCSTI)", DIES, c_ioctl_tiocsti},
  {"ioctl(FIOASYNC)", DIES, c_ioctl_fioasync},
  {"fchmod", DIES, c_fchmod},
  {"fchown", DIES, c_fchown},
  {"fchmodat2(AT_EMPTY_PATH)", DIES, c_fchmodat2},
  {"utimensat", DIES, c_utimensat},
  {"futimens", DIES, c_futimens},
  {"futimesat", DIES, c_futimesat},
  {"fsetxattr", DIES, c_fsetxattr},
  {"fallocate", DIES, c_fallocate},
  {"ftruncate", DIES, c_ftruncate},
  {"rename", DIES, c_rename},
  {"open(O_WRONLY)", DIES, c_open_write},
  {"openat(O_CREAT)", DIES, c_openat_create},
  {"socket", DIES, c_socket},
  {"execve", DIES, c_execve},
  {"fork", DIES, c_fork},
  {"clone(THREAD|NEWUSER)", DIES, c_clone_newuser_thread},
  {"unshare", DIES, c_unshare},
  {"setrlimit", DIES, c_setrlimit},
  {"prlimit64(parent)", DIES, c_prlimit_parent},
  {"madvise(MADV_HWPOISON)", DIES, c_madvise_hwpoison},
  {"prctl", DIES, c_prctl},
  {"getdents64", DIES, c_getdents},
  {"x32 getpid", DIES, c_x32},
  {"isatty: ENOTTY", RUNS, c_isatty},
  {"memory, clocks, limits, clone3 ENOSYS", RUNS, c_basics},
  {"two pthreads", RUNS, c_threads},
  {"raise(self)", RUNS, c_raise_self},
  {"abort", ABORTS, c_abort},
};

static const sb_case landlock_cases[] = {
  {"landlock: /etc/passwd", RUNS, c_ll_passwd},
  {"landlock: /proc/self", RUNS, c_ll_proc_self},
  {"landlock: /proc/PPID/environ", RUNS, c_ll_proc_parent},
  {"landlock: a file of the user's", RUNS, c_ll_own_file},
  {"landlock: the working folder", RUNS, c_ll_cwd},
  {"landlock: libraries stay readable", RUNS, c_ll_libs},
  {"landlock: dlopen of a library through ld.so.cache", RUNS, c_ll_load_fresh},
  {"landlock: two pthreads", RUNS, c_threads},
};

static void run_case(const sb_case *c, int load_first) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    CHECK(0, "fork: %s", strerror(errno));
    return;
  }
  if (pid == 0) {
    if ((load_first ? enter_and_load() : enter()) != 0) _exit(100);
    _exit(c->run() & 0x7f);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  char how[64];
  if (WIFSIGNALED(st)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(st));
  else snprintf(how, sizeof how, "exited with %d", WEXITSTATUS(st));
  if (c->expect == DIES)
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "%s: %s, want SIGSYS", c->name, how);
  else if (c->expect == ABORTS)
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: %s, want SIGABRT", c->name, how);
  else CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s, want exit 0", c->name, how);
}

/* ---- the session of a spawned worker ---- */

/* Runs as the worker (argv[1] = "child-session"): answers "ok" or what is wrong. */
static int child_session(void) {
  char msg[256] = "ok";
  struct stat st, nul;
  if (getsid(0) != getpid() || getpgrp() != getpid())
    snprintf(msg, sizeof msg, "sid %d pgrp %d pid %d", (int)getsid(0), (int)getpgrp(), (int)getpid());
  else if (open("/dev/tty", O_RDONLY) >= 0 || errno != ENXIO)
    snprintf(msg, sizeof msg, "/dev/tty opens (or errno %d): a controlling terminal", errno);
  else if (fstat(0, &st) != 0 || stat("/dev/null", &nul) != 0 || st.st_rdev != nul.st_rdev)
    snprintf(msg, sizeof msg, "stdin is not /dev/null");
  else if (isatty(0) || isatty(1) || isatty(2)) snprintf(msg, sizeof msg, "a terminal on fds 0-2");
  for (int fd = 5; fd < 256 && !strcmp(msg, "ok"); fd++)
    if (fcntl(fd, F_GETFD) >= 0) snprintf(msg, sizeof msg, "fd %d survived the exec", fd);
  kl_err e;
  return kl_chan_send(4, msg, strlen(msg), &e) == KL_OK ? 0 : 1;
}

/* Runs as the worker (argv[1] = "child-sleep"): a grandchild in its group, then waits. */
static int child_sleep(void) {
  pid_t g = fork();
  if (g == 0) {
    pause();
    _exit(0);
  }
  char msg[32];
  int n = snprintf(msg, sizeof msg, "%d", (int)g);
  kl_err e;
  kl_chan_send(4, msg, (size_t)n, &e);
  pause();
  return 0;
}

static char self_path[4096];

static int recv_line(kl_proc *p, char *out, size_t n) {
  char *d = NULL;
  size_t len = 0;
  kl_err e;
  if (kl_proc_recv(p, 10000, &d, &len, &e) != KL_OK) {
    snprintf(out, n, "no reply: %.200s", e.msg);
    return -1;
  }
  snprintf(out, n, "%.*s", (int)len, d);
  kl_free(d);
  return 0;
}

static void test_session(void) {
  const char *argv[] = {self_path, "child-session", NULL};
  const char *keep[] = {"PATH", NULL};
  kl_proc p;
  kl_err e;
  if (kl_proc_spawn(&p, argv, keep, &e) != KL_OK) {
    CHECK(0, "spawn: %s", e.msg);
    return;
  }
  char line[256];
  recv_line(&p, line, sizeof line);
  CHECK(!strcmp(line, "ok"), "worker session: %s", line);
  kl_proc_close(&p, 2000);
}

/* kl_proc_kill still reaches the worker's whole group now that it leads a session. */
static void test_group_kill(void) {
  const char *argv[] = {self_path, "child-sleep", NULL};
  kl_proc p;
  kl_err e;
  if (kl_proc_spawn(&p, argv, NULL, &e) != KL_OK) {
    CHECK(0, "spawn: %s", e.msg);
    return;
  }
  char line[64];
  int ok = recv_line(&p, line, sizeof line) == 0;
  CHECK(ok, "grandchild pid: %s", line);
  pid_t g = ok ? (pid_t)atoi(line) : 0;
  kl_proc_kill(&p);
  CHECK(WIFSIGNALED(p.exit_status) && WTERMSIG(p.exit_status) == SIGKILL, "worker status 0x%x",
        p.exit_status);
  int gone = 0;
  for (int i = 0; i < 200 && g > 0 && !gone; i++) {
    /* the grandchild was reparented to us (subreaper) or to init: gone or a zombie */
    int st;
    if (waitpid(g, &st, WNOHANG) == g || (kill(g, 0) != 0 && errno == ESRCH)) gone = 1;
    else {
      char path[64], state = 0;
      snprintf(path, sizeof path, "/proc/%d/stat", (int)g);
      FILE *f = fopen(path, "r");
      if (f) {
        if (fscanf(f, "%*d %*s %c", &state) != 1) state = 0;
        fclose(f);
      }
      if (state == 'Z') gone = 1;
      else usleep(10000);
    }
  }
  CHECK(gone, "grandchild %d survived kl_proc_kill of its group", (int)g);
}

/* PR_SET_PDEATHSIG still holds: a worker whose spawner dies is killed. */
static void test_pdeathsig(void) {
  int fds[2];
  if (pipe(fds) != 0) return;
  pid_t mid = fork();
  if (mid == 0) {
    const char *argv[] = {self_path, "child-sleep", NULL};
    kl_proc p;
    kl_err e;
    int pid = -1;
    if (kl_proc_spawn(&p, argv, NULL, &e) == KL_OK) pid = p.pid;
    ssize_t w = write(fds[1], &pid, sizeof pid);
    (void)w;
    _exit(0); /* the worker's parent dies without killing it */
  }
  close(fds[1]);
  int pid = -1;
  ssize_t r = read(fds[0], &pid, sizeof pid);
  close(fds[0]);
  waitpid(mid, NULL, 0);
  CHECK(r == sizeof pid && pid > 0, "no worker spawned");
  if (pid <= 0) return;
  int st = 0, reaped = 0;
  for (int i = 0; i < 300 && !reaped; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid) reaped = 1;
    else usleep(10000);
  }
  CHECK(reaped && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "orphaned worker: reaped %d status 0x%x",
        reaped, st);
  if (!reaped) kill(-pid, SIGKILL);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "child-session")) return child_session();
  if (argc > 1 && !strcmp(argv[1], "child-sleep")) return child_sleep();
  if (!realpath(argv[0], self_path)) snprintf(self_path, sizeof self_path, "%s", argv[0]);
  /* orphaned grandchildren come back to us, so the tests can reap them */
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  Dl_info di;
  void *libm = dlopen("libm.so.6", RTLD_NOW);
  void *cos_fn = libm ? dlsym(libm, "cos") : NULL;
  if (!cos_fn || !dladdr(cos_fn, &di) || !di.dli_fname || !realpath(di.dli_fname, libm_path)) {
    fprintf(stderr, "cannot find libm\n");
    return 1;
  }
  snprintf(scratch, sizeof scratch, "/tmp/kl_test_sandbox_%d", (int)getpid());
  int fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "x", 1) != 1) {
    fprintf(stderr, "cannot create %s\n", scratch);
    return 1;
  }
  close(fd);

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], 0);
  /* The same denials hold once Landlock is on. */
  run_case(&cases[0], 1);
  run_case(&cases[14], 1);

  landlock_abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1U /* VERSION */);
  if (landlock_abi > 0) {
    fresh_lib = pick_fresh_lib();
    for (size_t i = 0; i < sizeof landlock_cases / sizeof landlock_cases[0]; i++) {
      if (landlock_cases[i].run == c_ll_load_fresh && !fresh_lib) {
        printf("SKIP %s: no unloaded library found\n", landlock_cases[i].name);
        continue;
      }
      run_case(&landlock_cases[i], 1);
    }
  } else {
    printf("SKIP landlock cases: unavailable here (errno %d)\n", errno);
  }

  test_session();
  test_group_kill();
  test_pdeathsig();

  unlink(scratch);
  printf("%s (landlock ABI %d)\n", failures ? "FAILED" : "ok", landlock_abi);
  return failures ? 1 : 0;
}
