/* test_proc.c: unit tests for worker processes (kl_proc_* and kl_chan_*), using this binary as the worker. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kloop.h"

#ifdef KL_STANDALONE
void kl_free(void *p) { free(p); }
#endif

/*
 * The parent re-executes this binary with argv[1] = "child-<mode>"; the child
 * talks on fds 3/4 with kl_chan_*. Each check prints FAIL with its line and the
 * run exits nonzero if any failed.
 */

#include "kl_check.h"

static char self_path[4096];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- child modes ---- */

static int child_echo(void) {
  for (;;) {
    char *d;
    size_t n;
    kl_err e;
    int rc = kl_chan_recv(3, &d, &n, &e);
    if (rc == KL_ECLOSED) return 0;
    if (rc != KL_OK) return 10 + rc;
    rc = kl_chan_send(4, d, n, &e);
    free(d);
    if (rc != KL_OK) return 20 + rc;
  }
}

static int child_flood(void) {
  /* 50 MB of numbered lines to stdout, a marker on stderr, then a reply. */
  static char buf[1 << 16];
  size_t total = 0, target = 50u << 20;
  long line = 0;
  while (total < target) {
    size_t k = 0;
    while (k + 32 < sizeof buf) k += (size_t)sprintf(buf + k, "line %ld\n", line++);
    size_t off = 0;
    while (off < k) {
      ssize_t w = write(1, buf + off, k - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return 2;
      }
      off += (size_t)w;
    }
    total += k;
  }
  char last[64];
  int m = snprintf(last, sizeof last, "END-OF-FLOOD after line %ld\n", line - 1);
  if (write(2, last, (size_t)m) != m) return 3;
  kl_err e;
  return kl_chan_send(4, "flooded", 7, &e) == KL_OK ? 0 : 4;
}

static int child_sleep(void) {
  for (;;) pause();
  return 0;
}

static int child_grandchild(void) {
  /* Forks a sleeper, reports its pid, then sleeps: kill must take both. */
  pid_t g = fork();
  if (g == 0) {
    for (;;) pause();
  }
  char msg[32];
  int m = snprintf(msg, sizeof msg, "%d", (int)g);
  kl_err e;
  kl_chan_send(4, msg, (size_t)m, &e);
  for (;;) pause();
  return 0;
}

static int child_segv(void) {
  signal(SIGSEGV, SIG_DFL);
  volatile int *volatile np = NULL;
  *np = 1;
  return 0;
}

static int child_exit3(void) {
  fprintf(stderr, "about to exit 3\n");
  fflush(stderr);
  exit(3);
}

static int child_env(void) {
  const char *s = getenv("SECRET_KEY"), *p = getenv("PATH"), *k = getenv("KLOOP_TEST_VAR");
  char msg[512];
  int m = snprintf(msg, sizeof msg, "SECRET_KEY=%s;PATH=%s;KLOOP_TEST_VAR=%s", s ? s : "(absent)",
                   p ? "(present)" : "(absent)", k ? k : "(absent)");
  kl_err e;
  return kl_chan_send(4, msg, (size_t)m, &e) == KL_OK ? 0 : 1;
}

static int child_fds(void) {
  /* Lists open fds, minus the one opendir itself uses. */
  char msg[1024] = "";
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 1;
  int self = dirfd(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (atoi(de->d_name) == self) continue;
    strncat(msg, de->d_name, sizeof msg - strlen(msg) - 2);
    strcat(msg, ",");
  }
  closedir(d);
  kl_err e;
  return kl_chan_send(4, msg, strlen(msg), &e) == KL_OK ? 0 : 1;
}

static int child_bogus(void) {
  /* A header claiming 4 GiB. */
  unsigned char hdr[4] = {0xff, 0xff, 0xff, 0xff};
  if (write(4, hdr, 4) != 4) return 1;
  for (;;) pause();
  return 0;
}

static int child_exit0(void) { return 0; }

static int child_orphan_fd4(void) {
  /* Exits 5 while a grandchild keeps fd 4 open: no EOF ever comes. */
  pid_t g = fork();
  if (g == 0) {
    for (;;) pause();
  }
  return 5;
}

static int child_slow_reply(void) {
  /* Half a frame, then a stall: recv must time out and refuse to resume. */
  unsigned char hdr[6] = {10, 0, 0, 0, 'a', 'b'};
  if (write(4, hdr, sizeof hdr) != (ssize_t)sizeof hdr) return 1;
  for (;;) pause();
  return 0;
}

static int child_main(const char *mode) {
  if (!strcmp(mode, "child-echo")) return child_echo();
  if (!strcmp(mode, "child-flood")) return child_flood();
  if (!strcmp(mode, "child-sleep")) return child_sleep();
  if (!strcmp(mode, "child-grandchild")) return child_grandchild();
  if (!strcmp(mode, "child-segv")) return child_segv();
  if (!strcmp(mode, "child-exit3")) return child_exit3();
  if (!strcmp(mode, "child-env")) return child_env();
  if (!strcmp(mode, "child-fds")) return child_fds();
  if (!strcmp(mode, "child-bogus")) return child_bogus();
  if (!strcmp(mode, "child-exit0")) return child_exit0();
  if (!strcmp(mode, "child-orphan-fd4")) return child_orphan_fd4();
  if (!strcmp(mode, "child-slow-reply")) return child_slow_reply();
  fprintf(stderr, "unknown child mode %s\n", mode);
  return 99;
}

/* ---- parent helpers ---- */

static int spawn_mode(kl_proc *p, const char *mode, const char *const *env_keep) {
  const char *argv[] = {self_path, mode, NULL};
  kl_err e = {0};
  int rc = kl_proc_spawn(p, argv, env_keep, &e);
  CHECK(rc == KL_OK, "spawn %s: rc=%d %s", mode, rc, e.msg);
  return rc;
}

static int proc_gone(pid_t pid) {
  /* Gone, or a zombie waiting for init: either way no longer running. */
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = 0;
  char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* ---- tests ---- */

static void test_chan_inprocess(void) {
  int fds[2];
  CHECK(pipe(fds) == 0, "pipe");
  kl_err e = {0};
  CHECK(kl_chan_send(fds[1], "hello", 5, &e) == KL_OK, "%s", e.msg);
  CHECK(kl_chan_send(fds[1], "", 0, &e) == KL_OK, "%s", e.msg);
  char *d = NULL;
  size_t n = 99;
  CHECK(kl_chan_recv(fds[0], &d, &n, &e) == KL_OK, "%s", e.msg);
  CHECK(d && n == 5 && !memcmp(d, "hello", 6), "got %zu bytes", n);
  kl_free(d);
  CHECK(kl_chan_recv(fds[0], &d, &n, &e) == KL_OK && n == 0 && d && d[0] == 0, "empty frame");
  kl_free(d);
  /* Truncated frame: header says 10, only 3 bytes, then EOF. */
  unsigned char part[7] = {10, 0, 0, 0, 'x', 'y', 'z'};
  CHECK(write(fds[1], part, 7) == 7, "write");
  close(fds[1]);
  int rc = kl_chan_recv(fds[0], &d, &n, &e);
  CHECK(rc == KL_ECLOSED && d == NULL, "truncated: rc=%d %s", rc, e.msg);
  rc = kl_chan_recv(fds[0], &d, &n, &e);
  CHECK(rc == KL_ECLOSED, "eof: rc=%d", rc);
  close(fds[0]);
  /* Oversized send is refused before touching the data. */
  CHECK(kl_chan_send(1, "x", (size_t)257 << 20, &e) == KL_EINVAL, "oversized chan send");
}

static void test_echo(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-echo", NULL)) return;
  CHECK(p.pid > 0 && p.to_fd >= 0 && p.from_fd >= 0 && p.out_fd >= 0 && !p.exited, "fields");
  size_t big = 1u << 20;
  char *bigmsg = malloc(big);
  for (size_t i = 0; i < big; i++) bigmsg[i] = (char)(i * 131 + 7);
  struct {
    const char *d;
    size_t n;
  } msgs[] = {{"ping", 4}, {"", 0}, {"with\0nul", 8}, {bigmsg, big}, {"last", 4}};
  kl_err e = {0};
  for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
    int rc = kl_proc_send(&p, msgs[i].d, msgs[i].n, &e);
    CHECK(rc == KL_OK, "send %zu: %s", i, e.msg);
    char *d = NULL;
    size_t n = 0;
    rc = kl_proc_recv(&p, 5000, &d, &n, &e);
    CHECK(rc == KL_OK, "recv %zu: rc=%d %s", i, rc, e.msg);
    CHECK(d && n == msgs[i].n && !memcmp(d, msgs[i].d, n) && d[n] == 0, "echo %zu mismatch (n=%zu)", i, n);
    kl_free(d);
  }
  /* timeout 0 with nothing pending: immediate KL_ETIMEOUT, and the channel survives. */
  char *d = NULL;
  size_t n = 0;
  double t0 = now_s();
  int rc = kl_proc_recv(&p, 0, &d, &n, &e);
  CHECK(rc == KL_ETIMEOUT && now_s() - t0 < 0.1, "idle recv(0): rc=%d", rc);
  CHECK(kl_proc_send(&p, "again", 5, &e) == KL_OK, "%s", e.msg);
  rc = kl_proc_recv(&p, 5000, &d, &n, &e);
  CHECK(rc == KL_OK && n == 5 && !memcmp(d, "again", 5), "after idle timeout: rc=%d %s", rc, e.msg);
  kl_free(d);
  /* Too large to send. */
  CHECK(kl_proc_send(&p, bigmsg, (size_t)300 << 20, &e) == KL_EINVAL, "oversized send");
  free(bigmsg);
  /* Closing fd 3 makes the echo worker exit 0 on its own. */
  rc = kl_proc_close(&p, 2000);
  CHECK(rc == KL_OK, "close rc=%d", rc);
  CHECK(p.exited && WIFEXITED(p.exit_status) && WEXITSTATUS(p.exit_status) == 0, "status 0x%x",
        p.exit_status);
  CHECK(p.to_fd < 0 && p.from_fd < 0 && p.out_fd < 0, "fds closed");
  CHECK(kl_proc_close(&p, 2000) == KL_OK && kl_proc_kill(&p) == KL_OK, "idempotent");
  rc = kl_proc_recv(&p, 100, &d, &n, &e);
  CHECK(rc == KL_ECLOSED && strstr(e.msg, "status 0"), "recv after close: rc=%d %s", rc, e.msg);
}

static void test_flood(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-flood", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  double t0 = now_s();
  int rc = kl_proc_recv(&p, 60000, &d, &n, &e);
  CHECK(rc == KL_OK && n == 7 && !memcmp(d, "flooded", 7), "rc=%d %s", rc, e.msg);
  kl_free(d);
  CHECK(p.out_total >= (50u << 20), "out_total=%zu", p.out_total);
  CHECK(p.tail_len == sizeof p.tail, "tail_len=%zu", p.tail_len);
  const char *marker = "END-OF-FLOOD after line ";
  char *m = memmem(p.tail, p.tail_len, marker, strlen(marker));
  CHECK(m != NULL && p.tail[p.tail_len - 1] == '\n', "tail does not end with the marker");
  if (m) {
    /* The line before the marker must be the last numbered line. */
    long last = atol(m + strlen(marker));
    char want[64];
    int k = snprintf(want, sizeof want, "line %ld\n", last);
    CHECK(m - p.tail >= k && !memcmp(m - k, want, (size_t)k), "tail out of order");
  }
  printf("  flood: %zu bytes in %.2f s\n", p.out_total, now_s() - t0);
  rc = kl_proc_close(&p, 2000);
  CHECK(rc == KL_OK, "close rc=%d", rc);
}

static void test_timeout_and_kill(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-sleep", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  double t0 = now_s();
  int rc = kl_proc_recv(&p, 300, &d, &n, &e);
  double dt = now_s() - t0;
  CHECK(rc == KL_ETIMEOUT && d == NULL, "rc=%d %s", rc, e.msg);
  CHECK(dt >= 0.29 && dt < 0.8, "took %.3f s", dt);
  int pid = p.pid;
  rc = kl_proc_kill(&p);
  CHECK(rc == KL_OK && p.exited, "kill rc=%d", rc);
  CHECK(WIFSIGNALED(p.exit_status) && WTERMSIG(p.exit_status) == SIGKILL, "status 0x%x", p.exit_status);
  CHECK(p.to_fd < 0 && p.from_fd < 0 && p.out_fd < 0, "fds closed");
  CHECK(kill(pid, 0) < 0 && errno == ESRCH, "pid %d still exists", pid);
  CHECK(kl_proc_kill(&p) == KL_OK && kl_proc_close(&p, 10) == KL_OK, "idempotent");

  /* A worker that ignores EOF on fd 3: close waits the grace, then kills. */
  if (spawn_mode(&p, "child-sleep", NULL)) return;
  t0 = now_s();
  rc = kl_proc_close(&p, 200);
  dt = now_s() - t0;
  CHECK(rc == KL_ETIMEOUT && p.exited && WIFSIGNALED(p.exit_status), "close rc=%d", rc);
  CHECK(dt >= 0.19 && dt < 1.0, "close took %.3f s", dt);
}

static void test_group_kill(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-grandchild", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
  CHECK(rc == KL_OK, "rc=%d %s", rc, e.msg);
  int g = d ? atoi(d) : 0;
  kl_free(d);
  CHECK(g > 0 && !proc_gone(g), "grandchild %d not running before kill", g);
  kl_proc_kill(&p);
  int gone = 0;
  for (int i = 0; i < 200 && !(gone = proc_gone(g)); i++) usleep(10000);
  CHECK(g > 0 && gone, "grandchild %d survived the group kill", g);
}

static void test_orphaned_reply_channel(void) {
  /* recv must notice the worker died even though its fd 4 stays open elsewhere. */
  kl_proc p;
  if (spawn_mode(&p, "child-orphan-fd4", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  double t0 = now_s();
  int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
  CHECK(rc == KL_ECLOSED && strstr(e.msg, "status 5") && now_s() - t0 < 3.0, "rc=%d after %.2f s: %s", rc,
        now_s() - t0, e.msg);
  kl_proc_kill(&p); /* takes the grandchild with the group */
}

static void test_segv(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-segv", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
  CHECK(rc == KL_ECLOSED && d == NULL, "rc=%d %s", rc, e.msg);
  CHECK(strstr(e.msg, "signal 11") != NULL, "msg: %s", e.msg);
  CHECK(p.exited && WIFSIGNALED(p.exit_status) && WTERMSIG(p.exit_status) == SIGSEGV, "status");
  printf("  segv: %s\n", e.msg);
  kl_proc_close(&p, 0);
}

static void test_exit3(void) {
  kl_proc p;
  if (spawn_mode(&p, "child-exit3", NULL)) return;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
  CHECK(rc == KL_ECLOSED, "rc=%d %s", rc, e.msg);
  CHECK(strstr(e.msg, "status 3") != NULL, "msg: %s", e.msg);
  CHECK(p.exited && WIFEXITED(p.exit_status) && WEXITSTATUS(p.exit_status) == 3, "status");
  CHECK(memmem(p.tail, p.tail_len, "about to exit 3", 15) != NULL, "stderr not captured: %.*s",
        (int)p.tail_len, p.tail);
  printf("  exit3: %s\n", e.msg);
  kl_proc_close(&p, 0);
}

static void test_env(void) {
  static const char *const keep[] = {"PATH", "HOME", "CUDA_", "KLOOP_", NULL};
  setenv("SECRET_KEY", "hunter2", 1);
  setenv("KLOOP_TEST_VAR", "yes", 1);
  if (!getenv("PATH")) setenv("PATH", "/usr/bin:/bin", 1);
  for (int stripped = 1; stripped >= 0; stripped--) {
    kl_proc p;
    if (spawn_mode(&p, "child-env", stripped ? keep : NULL)) return;
    char *d = NULL;
    size_t n = 0;
    kl_err e = {0};
    int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
    CHECK(rc == KL_OK, "rc=%d %s", rc, e.msg);
    const char *want = stripped ? "SECRET_KEY=(absent);PATH=(present);KLOOP_TEST_VAR=yes"
                                : "SECRET_KEY=hunter2;PATH=(present);KLOOP_TEST_VAR=yes";
    CHECK(d && !strcmp(d, want), "stripped=%d got %s", stripped, d ? d : "(null)");
    kl_free(d);
    kl_proc_close(&p, 2000);
  }
  unsetenv("SECRET_KEY");
}

static void test_fds(void) {
  /* Stray fds without O_CLOEXEC, just above the worker's range and far up, must not reach it. */
  int stray = open("/dev/null", O_RDONLY);
  int s6 = dup2(stray, 6), s100 = dup2(stray, 100);
  CHECK(s6 == 6 && s100 == 100, "dup2 stray");
  kl_proc p;
  if (spawn_mode(&p, "child-fds", NULL) == KL_OK) {
    char *d = NULL;
    size_t n = 0;
    kl_err e = {0};
    int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
    CHECK(rc == KL_OK && d && !strcmp(d, "0,1,2,3,4,"), "fds: %s", d ? d : e.msg);
    kl_free(d);
    kl_proc_close(&p, 2000);
  }
  close(stray);
  close(6);
  close(100);
}

static void test_dead_worker_send(void) {
  /* SIGPIPE at its default here, so a leak of it would kill this test. */
  signal(SIGPIPE, SIG_DFL);
  kl_proc p;
  if (spawn_mode(&p, "child-exit0", NULL) == KL_OK) {
    char *d = NULL;
    size_t n = 0;
    kl_err e = {0};
    int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
    CHECK(rc == KL_ECLOSED && strstr(e.msg, "status 0"), "recv rc=%d %s", rc, e.msg);
    rc = kl_proc_send(&p, "hello", 5, &e);
    CHECK(rc == KL_ECLOSED, "send rc=%d %s", rc, e.msg);
    printf("  dead send: %s\n", e.msg);
    rc = kl_proc_send(&p, "hello", 5, &e);
    CHECK(rc == KL_ECLOSED, "second send rc=%d %s", rc, e.msg);
    kl_proc_close(&p, 0);
    sigset_t pend;
    sigpending(&pend);
    CHECK(!sigismember(&pend, SIGPIPE), "SIGPIPE left pending");
  }
  /* Worker side: kl_chan_send into a pipe with no reader. */
  int fds[2];
  if (pipe(fds) == 0) {
    close(fds[0]);
    kl_err e = {0};
    int rc = kl_chan_send(fds[1], "x", 1, &e);
    CHECK(rc == KL_ECLOSED, "chan send rc=%d %s", rc, e.msg);
    close(fds[1]);
  }
  signal(SIGPIPE, SIG_IGN);
}

static void test_exec_failure(void) {
  kl_proc p;
  const char *argv[] = {"/nonexistent/kloop-worker", NULL};
  kl_err e = {0};
  int rc = kl_proc_spawn(&p, argv, NULL, &e);
  CHECK(rc == KL_ENOTFOUND && strstr(e.msg, "/nonexistent/kloop-worker"), "rc=%d %s", rc, e.msg);
  CHECK(p.pid <= 0 && p.to_fd < 0 && p.from_fd < 0 && p.out_fd < 0, "proc not reset");
  CHECK(waitpid(-1, NULL, WNOHANG) <= 0, "a child was left unreaped");
  CHECK(kl_proc_kill(&p) == KL_OK && kl_proc_close(&p, 0) == KL_OK, "kill/close on failed spawn");
  printf("  exec failure: %s\n", e.msg);
  const char *empty[] = {NULL};
  CHECK(kl_proc_spawn(&p, empty, NULL, &e) == KL_EINVAL, "empty argv");
}

static void test_protocol_errors(void) {
  kl_proc p;
  char *d = NULL;
  size_t n = 0;
  kl_err e = {0};
  if (spawn_mode(&p, "child-bogus", NULL) == KL_OK) {
    int rc = kl_proc_recv(&p, 5000, &d, &n, &e);
    CHECK(rc == KL_EINVAL && d == NULL && p.from_fd < 0, "bogus header: rc=%d %s", rc, e.msg);
    rc = kl_proc_recv(&p, 100, &d, &n, &e);
    CHECK(rc == KL_ECLOSED, "after bogus: rc=%d", rc);
    kl_proc_kill(&p);
  }
  if (spawn_mode(&p, "child-slow-reply", NULL) == KL_OK) {
    double t0 = now_s();
    int rc = kl_proc_recv(&p, 300, &d, &n, &e);
    CHECK(rc == KL_ETIMEOUT && d == NULL && p.from_fd < 0 && now_s() - t0 < 0.8, "half frame: rc=%d %s", rc,
          e.msg);
    kl_proc_kill(&p);
  }
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strncmp(argv[1], "child-", 6)) return child_main(argv[1]);
  signal(SIGPIPE, SIG_IGN); /* as kloop's main does */
  ssize_t k = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (k <= 0) {
    perror("readlink /proc/self/exe");
    return 1;
  }
  self_path[k] = 0;

  struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
    {"chan_inprocess", test_chan_inprocess},
    {"echo", test_echo},
    {"flood", test_flood},
    {"timeout_and_kill", test_timeout_and_kill},
    {"group_kill", test_group_kill},
    {"orphaned_reply_channel", test_orphaned_reply_channel},
    {"segv", test_segv},
    {"exit3", test_exit3},
    {"env", test_env},
    {"fds", test_fds},
    {"dead_worker_send", test_dead_worker_send},
    {"exec_failure", test_exec_failure},
    {"protocol_errors", test_protocol_errors},
  };
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int before = failures;
    double t0 = now_s();
    tests[i].fn();
    printf("%s %s (%.2f s)\n", failures == before ? "ok  " : "FAIL", tests[i].name, now_s() - t0);
  }
  printf(failures ? "%d check(s) failed\n" : "all passed\n", failures);
  return failures ? 1 : 0;
}
