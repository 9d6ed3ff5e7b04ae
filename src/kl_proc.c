/* kl_proc.c: supervised worker processes: spawn, framed messages over pipes, output capture, kill. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kl_internal.h"

/*
 * Workers run untrusted GPU kernels, so everything here assumes the child may
 * hang, crash, flood its output, close pipes early or send garbage. The parent
 * never blocks without a deadline (except kl_proc_recv with timeout_ms < 0,
 * which still notices the worker's death), never takes SIGPIPE, and never trusts
 * a length it reads.
 *
 * Wire format, both directions: a 4-byte little-endian length, then that many
 * bytes. The child gets requests on fd 3 and writes replies on fd 4; its stdout
 * and stderr share a third pipe that the parent drains into p->tail.
 */

extern char **environ;

#define KL_FRAME_MAX ((size_t)256 << 20) /* 256 MiB, both directions */
#define KL_SEND_DEADLINE_MS 30000        /* kl_proc_send gives up after this */
#define KL_REAP_WAIT_MS 10000            /* waiting for a SIGKILLed worker to be reapable */
#define KL_EOF_REAP_MS 2000              /* a worker that closed fd 4 gets this long to exit */
#define KL_DRAIN_CHUNK 65536

/* ---- small helpers ---- */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void put_le32(unsigned char *b, uint32_t v) {
  b[0] = (unsigned char)v;
  b[1] = (unsigned char)(v >> 8);
  b[2] = (unsigned char)(v >> 16);
  b[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Appends output to the tail, keeping the most recent sizeof p->tail bytes in order. */
static void tail_append(kl_proc *p, const char *buf, size_t k) {
  size_t cap = sizeof p->tail;
  p->out_total += k;
  if (k >= cap) {
    memcpy(p->tail, buf + (k - cap), cap);
    p->tail_len = cap;
    return;
  }
  if (p->tail_len + k > cap) {
    size_t drop = p->tail_len + k - cap;
    memmove(p->tail, p->tail + drop, p->tail_len - drop);
    p->tail_len -= drop;
  }
  memcpy(p->tail + p->tail_len, buf, k);
  p->tail_len += k;
}

/* Reads what the output pipe holds, at most max_reads chunks so a flooding child
   cannot starve the reply channel. Closes out_fd on EOF or error. */
static void drain_output(kl_proc *p, int max_reads) {
  char buf[KL_DRAIN_CHUNK];
  for (int i = 0; i < max_reads && p->out_fd >= 0; i++) {
    ssize_t r = read(p->out_fd, buf, sizeof buf);
    if (r > 0) {
      tail_append(p, buf, (size_t)r);
    } else if (r == 0) {
      close_fd(&p->out_fd);
    } else if (errno == EINTR) {
      i--;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      close_fd(&p->out_fd);
    }
  }
}

/* Reads and discards whatever is on the reply channel (used only while closing). */
static void discard_replies(kl_proc *p) {
  char buf[KL_DRAIN_CHUNK];
  for (int i = 0; i < 64 && p->from_fd >= 0; i++) {
    ssize_t r = read(p->from_fd, buf, sizeof buf);
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(&p->from_fd);
  }
}

/* Non-blocking reap: 1 when the worker has been reaped (now or before). */
static int reap_nohang(kl_proc *p) {
  if (p->exited) return 1;
  int st = 0;
  pid_t r;
  do r = waitpid(p->pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == p->pid) {
    p->exited = 1;
    p->exit_status = st;
    return 1;
  }
  if (r < 0 && errno == ECHILD) {
    /* Someone else reaped it (SIGCHLD set to SIG_IGN, or a foreign waitpid(-1)). */
    p->exited = 1;
    p->exit_status = -1;
    return 1;
  }
  return 0;
}

/* Waits up to ms for the worker to exit, draining its output (and, when asked,
   discarding replies so a worker blocked writing one can finish). 1 if reaped. */
static int wait_exit(kl_proc *p, int ms, int discard) {
  int64_t deadline = now_ms() + (ms > 0 ? ms : 0);
  for (;;) {
    if (reap_nohang(p)) {
      drain_output(p, 64);
      return 1;
    }
    int64_t rem = deadline - now_ms();
    if (rem <= 0) return 0;
    struct pollfd fds[2];
    int nf = 0;
    if (p->out_fd >= 0) fds[nf++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
    if (discard && p->from_fd >= 0) fds[nf++] = (struct pollfd){.fd = p->from_fd, .events = POLLIN};
    /* Short naps: there is no portable way to poll for a child's exit. */
    int rc = poll(fds, (nfds_t)nf, rem < 10 ? (int)rem : 10);
    if (rc > 0) {
      for (int i = 0; i < nf; i++) {
        if (!fds[i].revents) continue;
        if (fds[i].fd == p->out_fd) drain_output(p, 16);
        else discard_replies(p);
      }
    }
  }
}

/* "worker exited with status 3", "worker killed by signal 11 (Segmentation fault)". */
static void describe_end(const kl_proc *p, char *buf, size_t n) {
  int st = p->exit_status;
  if (!p->exited) snprintf(buf, n, "worker (pid %d) is still running", p->pid);
  else if (st == -1) snprintf(buf, n, "worker ended (status unavailable: reaped elsewhere)");
  else if (WIFEXITED(st)) snprintf(buf, n, "worker exited with status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, n, "worker killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else snprintf(buf, n, "worker ended with raw status 0x%x", (unsigned)st);
}

/*
 * SIGPIPE guard: a write to a pipe whose reader died raises SIGPIPE in the writing
 * thread. kloop's main ignores it, but library code must not depend on that, so
 * writes run with SIGPIPE blocked and a SIGPIPE our own write caused is consumed
 * before the old mask returns. A SIGPIPE that was already pending is left alone.
 */
typedef struct pipe_guard {
  sigset_t old;
  int was_pending;
} pipe_guard;

static void guard_on(pipe_guard *g) {
  sigset_t s, pend;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  sigemptyset(&pend);
  sigpending(&pend);
  g->was_pending = sigismember(&pend, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &s, &g->old);
}

static void guard_off(pipe_guard *g, int got_epipe) {
  int e = errno;
  if (got_epipe && !g->was_pending) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, NULL, &zero) < 0 && errno == EINTR) {}
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
  errno = e;
}

/*
 * Writes one frame to fd. deadline < 0 waits forever (worker side). When drain
 * is not NULL its output pipe is drained while waiting, so a worker that prints
 * instead of reading cannot deadlock against us. *sent counts bytes written, so
 * the caller knows whether the stream is now mid-frame. Returns KL_OK,
 * KL_ECLOSED (reader gone), KL_ETIMEOUT or KL_ESYS.
 */
static int write_frame(int fd, const char *data, size_t n, int64_t deadline, kl_proc *drain, size_t *sent,
                       kl_err *err) {
  unsigned char hdr[4];
  put_le32(hdr, (uint32_t)n);
  struct iovec iov[2] = {{hdr, 4}, {(void *)data, n}};
  int cnt = n ? 2 : 1, first = 0;
  size_t total = 4 + n;
  *sent = 0;
  pipe_guard g;
  guard_on(&g);
  int rc = KL_OK, epipe = 0;
  while (*sent < total) {
    ssize_t w = writev(fd, iov + first, cnt - first);
    if (w > 0) {
      *sent += (size_t)w;
      size_t k = (size_t)w;
      while (first < cnt && k >= iov[first].iov_len) {
        k -= iov[first].iov_len;
        first++;
      }
      if (first < cnt) {
        iov[first].iov_base = (char *)iov[first].iov_base + k;
        iov[first].iov_len -= k;
      }
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EPIPE) {
      epipe = 1;
      rc = kl_fail(err, KL_ECLOSED, EPIPE, "the reader closed its end");
      break;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      rc = kl_fail_errno(err, "write to worker channel");
      break;
    }
    /* Would block: wait for room, draining the worker's output meanwhile. */
    int wait = -1;
    if (deadline >= 0) {
      int64_t rem = deadline - now_ms();
      if (rem <= 0) {
        rc = kl_fail(err, KL_ETIMEOUT, 0, "write timed out after %zu of %zu bytes", *sent, total);
        break;
      }
      wait = rem > INT_MAX ? INT_MAX : (int)rem;
    }
    struct pollfd fds[2] = {{.fd = fd, .events = POLLOUT}, {.fd = -1}};
    if (drain && drain->out_fd >= 0) fds[1] = (struct pollfd){.fd = drain->out_fd, .events = POLLIN};
    int pr = poll(fds, 2, wait);
    if (pr < 0 && errno != EINTR) {
      rc = kl_fail_errno(err, "poll on worker channel");
      break;
    }
    if (pr > 0 && fds[1].fd >= 0 && fds[1].revents) drain_output(drain, 16);
    /* POLLERR/POLLHUP on the write end: the next writev reports EPIPE. */
  }
  guard_off(&g, epipe);
  return rc;
}

/* Reads exactly n bytes from a (possibly non-blocking) fd, blocking as needed.
   Returns bytes read before EOF (< n on EOF), or -1 with errno set. */
static ssize_t read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r > 0) {
      got += (size_t)r;
    } else if (r == 0) {
      break;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      struct pollfd pf = {.fd = fd, .events = POLLIN};
      if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
    } else {
      return -1;
    }
  }
  return (ssize_t)got;
}

/* ---- worker side ---- */

int kl_chan_send(int fd, const char *data, size_t n, kl_err *err) {
  if (fd < 0 || (!data && n)) return kl_fail(err, KL_EINVAL, 0, "kl_chan_send: bad fd or NULL data");
  if (n > KL_FRAME_MAX)
    return kl_fail(err, KL_EINVAL, 0, "message of %zu bytes exceeds the 256 MiB limit", n);
  size_t sent;
  int rc = write_frame(fd, data, n, -1, NULL, &sent, err);
  if (rc == KL_ECLOSED) kl_fail(err, KL_ECLOSED, EPIPE, "channel closed by the peer");
  return rc;
}

/* On success *data is malloc'd (free with kl_free), NUL-terminated, *n excludes the NUL.
   On failure *data is NULL. EOF before a frame starts, or inside one, is KL_ECLOSED. */
int kl_chan_recv(int fd, char **data, size_t *n, kl_err *err) {
  if (data) *data = NULL;
  if (n) *n = 0;
  if (fd < 0 || !data || !n) return kl_fail(err, KL_EINVAL, 0, "kl_chan_recv: bad fd or NULL out");
  unsigned char hdr[4];
  ssize_t r = read_full(fd, hdr, 4);
  if (r < 0) return kl_fail_errno(err, "read from channel");
  if (r == 0) return kl_fail(err, KL_ECLOSED, 0, "channel closed by the peer");
  if (r < 4) return kl_fail(err, KL_ECLOSED, 0, "channel closed inside a message header");
  size_t len = get_le32(hdr);
  if (len > KL_FRAME_MAX)
    return kl_fail(err, KL_EINVAL, 0, "incoming message of %zu bytes exceeds the 256 MiB limit", len);
  char *buf = malloc(len + 1);
  if (!buf) return kl_fail(err, KL_ENOMEM, 0, "out of memory for a %zu-byte message", len);
  r = read_full(fd, buf, len);
  if (r < 0) {
    int rc = kl_fail_errno(err, "read from channel");
    free(buf);
    return rc;
  }
  if ((size_t)r < len) {
    free(buf);
    return kl_fail(err, KL_ECLOSED, 0, "channel closed after %zd of %zu message bytes", r, len);
  }
  buf[len] = 0;
  *data = buf;
  *n = len;
  return KL_OK;
}

/* ---- parent side ---- */

/* What the child reports on its status pipe when setup or exec fails. */
typedef struct child_report {
  int stage; /* 1 setup, 2 exec */
  int err;   /* errno */
} child_report;

static void child_write(int fd, const char *s) {
  ssize_t w = write(fd, s, strlen(s));
  (void)w;
}

/* Runs in the forked child: only async-signal-safe calls (the parent may have
   threads), no malloc, no return. */
static void child_main(int req_r, int rep_w, int out_w, int st_w, pid_t parent, const char *const *argv,
                       char *const *envp) {
  child_report rep = {1, 0};
  int hi[5] = {-1, -1, -1, -1, -1};
  int src[5];

  /* Own session, hence own process group (kl_proc_kill's kill(-pid) reaches anything
     the worker forks) and no controlling terminal: a worker cannot open /dev/tty,
     push input into the user's terminal or get its signals. setsid fails only for a
     group leader, which the fresh child is not (the parent does not setpgid it). */
  if (setsid() < 0) goto fail;
  /* Die with the parent instead of lingering on the GPU. Tied to the forking
     thread: spawn from a thread that outlives its workers (kloop: the main one). */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);

  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (nul < 0) goto fail;
  /* Lift every fd we keep above the targets first, so no dup2 clobbers another source. */
  src[0] = nul, src[1] = out_w, src[2] = req_r, src[3] = rep_w, src[4] = st_w;
  for (int i = 0; i < 5; i++) {
    hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
    if (hi[i] < 0) goto fail;
  }
  st_w = hi[4];
  /* dup2 clears FD_CLOEXEC on the target, which is what we want for 0-4. */
  if (dup2(hi[0], 0) < 0 || dup2(hi[1], 1) < 0 || dup2(hi[1], 2) < 0 || dup2(hi[2], 3) < 0 ||
      dup2(hi[3], 4) < 0)
    goto fail;
  /* The status pipe lives on fd 5, close-on-exec, so a successful exec closes it. */
  if (dup2(hi[4], 5) < 0) goto fail;
  st_w = 5;
  if (fcntl(5, F_SETFD, FD_CLOEXEC) < 0) goto fail;
  /* Nothing else of the parent's (sockets, CUDA device files) leaks into the worker:
     close_range where the kernel has it, else close each fd up to the limit. */
  int closed = 0;
#ifdef SYS_close_range
  closed = syscall(SYS_close_range, 6u, ~0u, 0u) == 0;
#endif
  if (!closed) {
    struct rlimit rl;
    long top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      top = rl.rlim_cur > 65536 ? 65536 : (long)rl.rlim_cur;
    for (long fd = 6; fd < top; fd++) close((int)fd);
  }
  /* Blocked signals survive exec; so does SIG_IGN. Give the worker a clean slate
     for the ones that matter to it. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);

  rep.stage = 2;
  execve(argv[0], (char *const *)argv, envp);
fail:
  rep.err = errno;
  child_write(2, "kloop: worker ");
  child_write(2, rep.stage == 2 ? "exec failed: " : "setup failed before exec: ");
  child_write(2, argv[0]);
  child_write(2, "\n");
  if (st_w >= 0) {
    ssize_t w = write(st_w, &rep, sizeof rep);
    (void)w;
  }
  _exit(127);
}

/* Builds the worker's environment: pointers into environ (not copies), NULL-terminated.
   Returned array is malloc'd; NULL on allocation failure. */
static char **filter_env(const char *const *keep) {
  size_t cnt = 0;
  for (char **e = environ; e && *e; e++) cnt++;
  char **out = malloc((cnt + 1) * sizeof *out);
  if (!out) return NULL;
  size_t k = 0;
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    size_t name_len = eq ? (size_t)(eq - *e) : strlen(*e);
    for (const char *const *pre = keep; *pre; pre++) {
      size_t pl = strlen(*pre);
      if (pl <= name_len && strncmp(*e, *pre, pl) == 0) {
        out[k++] = *e;
        break;
      }
    }
  }
  out[k] = NULL;
  return out;
}

static void reset_proc(kl_proc *p) {
  memset(p, 0, sizeof *p);
  p->pid = -1;
  p->to_fd = p->from_fd = p->out_fd = -1;
}

int kl_proc_spawn(kl_proc *p, const char *const *argv, const char *const *env_keep, kl_err *err) {
  if (!p) return kl_fail(err, KL_EINVAL, 0, "kl_proc_spawn: NULL proc");
  reset_proc(p);
  if (!argv || !argv[0] || !argv[0][0]) return kl_fail(err, KL_EINVAL, 0, "kl_proc_spawn: empty argv");

  int req[2] = {-1, -1}, rep[2] = {-1, -1}, out[2] = {-1, -1}, st[2] = {-1, -1};
  char **envp = NULL;
  int rc = KL_OK;
  if (pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
      pipe2(st, O_CLOEXEC) < 0) {
    rc = kl_fail_errno(err, "pipe for worker");
    goto out;
  }
  /* Parent ends never block: every wait goes through poll with a deadline. */
  if (set_nonblock(req[1]) < 0 || set_nonblock(rep[0]) < 0 || set_nonblock(out[0]) < 0) {
    rc = kl_fail_errno(err, "fcntl O_NONBLOCK");
    goto out;
  }
  /* Built before fork: the child must not call malloc. */
  envp = env_keep ? filter_env(env_keep) : environ;
  if (!envp) {
    rc = kl_fail(err, KL_ENOMEM, 0, "out of memory building the worker environment");
    goto out;
  }

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    rc = kl_fail_errno(err, "fork worker");
    goto out;
  }
  if (pid == 0) child_main(req[0], rep[1], out[1], st[1], parent, argv, envp);

  /* No setpgid(pid, pid) from this side: it would race the child's setsid. The child
     has its own group before exec, and this function returns only after the exec (or
     the child's report), so kill(-pid) finds the group; before that, kl_proc_kill's
     kill(pid) still reaches it. */
  close_fd(&req[0]);
  close_fd(&rep[1]);
  close_fd(&out[1]);
  close_fd(&st[1]);

  /* EOF on the status pipe means exec succeeded (the pipe was close-on-exec). */
  child_report cr;
  ssize_t got = 0;
  while (got < (ssize_t)sizeof cr) {
    ssize_t r = read(st[0], (char *)&cr + got, sizeof cr - (size_t)got);
    if (r > 0) got += r;
    else if (r < 0 && errno == EINTR) continue;
    else break;
  }
  p->pid = pid;
  p->to_fd = req[1];
  p->from_fd = rep[0];
  p->out_fd = out[0];
  req[1] = rep[0] = out[0] = -1;
  if (got == (ssize_t)sizeof cr) {
    kl_proc_kill(p); /* it is already exiting with 127; this reaps it and closes the pipes */
    if (cr.stage == 2 && (cr.err == ENOENT || cr.err == ENOTDIR))
      rc = kl_fail(err, KL_ENOTFOUND, cr.err, "cannot execute worker %s: %s", argv[0], strerror(cr.err));
    else
      rc = kl_fail(err, KL_ESYS, cr.err, "cannot %s worker %s: %s", cr.stage == 2 ? "execute" : "set up",
                   argv[0], strerror(cr.err));
    reset_proc(p);
  }

out:
  close_fd(&req[0]);
  close_fd(&req[1]);
  close_fd(&rep[0]);
  close_fd(&rep[1]);
  close_fd(&out[0]);
  close_fd(&out[1]);
  close_fd(&st[0]);
  close_fd(&st[1]);
  if (envp && envp != environ) free(envp);
  return rc;
}

/* Fills err with KL_ECLOSED describing how the worker ended (waiting briefly for it). */
static int closed_error(kl_proc *p, int reap_ms, const char *what, kl_err *err) {
  char how[160];
  if (!p->exited && reap_ms > 0) wait_exit(p, reap_ms, 0);
  describe_end(p, how, sizeof how);
  return kl_fail(err, KL_ECLOSED, 0, "%s%s%s", how, what[0] ? " " : "", what);
}

int kl_proc_send(kl_proc *p, const char *data, size_t n, kl_err *err) {
  if (!p || p->pid <= 0 || (!data && n)) return kl_fail(err, KL_EINVAL, 0, "kl_proc_send: bad arguments");
  if (n > KL_FRAME_MAX)
    return kl_fail(err, KL_EINVAL, 0, "message of %zu bytes exceeds the 256 MiB limit", n);
  if (p->to_fd < 0) return closed_error(p, 0, "(request channel closed)", err);
  size_t sent = 0;
  int rc = write_frame(p->to_fd, data, n, now_ms() + KL_SEND_DEADLINE_MS, p, &sent, err);
  if (rc == KL_OK) return KL_OK;
  if (rc == KL_ECLOSED) {
    /* fd 3 is gone: the worker died or closed it. Say how, if it ends soon. */
    close_fd(&p->to_fd);
    return closed_error(p, 200, "(it stopped reading requests)", err);
  }
  /* A half-written frame would desynchronize the stream: stop using it. */
  if (sent > 0) close_fd(&p->to_fd);
  if (rc == KL_ETIMEOUT)
    kl_fail(err, KL_ETIMEOUT, 0, "worker did not read a %zu-byte request within %d s%s", n,
            KL_SEND_DEADLINE_MS / 1000, sent > 0 ? "; request channel closed" : "");
  return rc;
}

/* Reply channel hit EOF: reap (killing a worker that closed fd 4 but lives on). */
static int on_reply_eof(kl_proc *p, int mid_frame, kl_err *err) {
  close_fd(&p->from_fd);
  drain_output(p, 64);
  if (!wait_exit(p, KL_EOF_REAP_MS, 0)) {
    kl_proc_kill(p);
    char how[160];
    describe_end(p, how, sizeof how);
    return kl_fail(err, KL_ECLOSED, 0, "worker closed its reply channel but kept running; killed (%s)", how);
  }
  return closed_error(p, 0, mid_frame ? "(in the middle of a reply)" : "", err);
}

/* On success *data is malloc'd (kl_free), NUL-terminated; *n excludes the NUL. On
   KL_ETIMEOUT with part of a frame consumed, the reply channel is closed (the
   stream cannot be resumed); with nothing consumed the channel stays usable. */
int kl_proc_recv(kl_proc *p, int timeout_ms, char **data, size_t *n, kl_err *err) {
  if (data) *data = NULL;
  if (n) *n = 0;
  if (!p || p->pid <= 0 || !data || !n) return kl_fail(err, KL_EINVAL, 0, "kl_proc_recv: bad arguments");
  if (p->from_fd < 0) return closed_error(p, 0, "(reply channel closed)", err);

  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  unsigned char hdr[4];
  size_t hgot = 0, len = 0, got = 0;
  char *buf = NULL;
  int rc;
  for (;;) {
    /* Reaped before this read: whatever it wrote is already in the pipe. */
    int dead = p->exited;
    for (;;) {
      ssize_t r;
      if (hgot < 4) r = read(p->from_fd, hdr + hgot, 4 - hgot);
      else r = read(p->from_fd, buf + got, len - got);
      if (r == 0) {
        free(buf);
        return on_reply_eof(p, hgot > 0, err);
      }
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        rc = kl_fail_errno(err, "read from worker");
        free(buf);
        close_fd(&p->from_fd);
        return rc;
      }
      if (hgot < 4) {
        hgot += (size_t)r;
        if (hgot < 4) continue;
        len = get_le32(hdr);
        if (len > KL_FRAME_MAX) {
          close_fd(&p->from_fd);
          return kl_fail(err, KL_EINVAL, 0,
                         "worker sent a %zu-byte message (limit 256 MiB); reply channel closed", len);
        }
        buf = malloc(len + 1);
        if (!buf) {
          close_fd(&p->from_fd);
          return kl_fail(err, KL_ENOMEM, 0, "out of memory for a %zu-byte reply; reply channel closed", len);
        }
      } else {
        got += (size_t)r;
      }
      if (hgot == 4 && got == len) {
        buf[len] = 0;
        *data = buf;
        *n = len;
        drain_output(p, 1); /* keep the tail fresh for the caller */
        return KL_OK;
      }
    }
    if (dead) {
      /* Exited, yet fd 4 is open (a grandchild holds it): no reply will come. */
      free(buf);
      close_fd(&p->from_fd);
      return closed_error(p, 0, "(its reply channel is held open by another process)", err);
    }

    int wait = 1000; /* ticks to notice a worker whose fd 4 outlives it */
    if (deadline >= 0) {
      int64_t rem = deadline - now_ms();
      if (rem <= 0) break;
      if (rem < wait) wait = (int)rem;
    }
    struct pollfd fds[2] = {{.fd = p->from_fd, .events = POLLIN}, {.fd = p->out_fd, .events = POLLIN}};
    int pr = poll(fds, p->out_fd >= 0 ? 2 : 1, wait);
    if (pr < 0) {
      if (errno == EINTR) continue;
      rc = kl_fail_errno(err, "poll on worker");
      free(buf);
      return rc;
    }
    if (pr > 0 && p->out_fd >= 0 && fds[1].revents) drain_output(p, 16);
    if (pr == 0) reap_nohang(p);
  }

  free(buf);
  if (hgot > 0) {
    close_fd(&p->from_fd);
    return kl_fail(err, KL_ETIMEOUT, 0,
                   "no complete reply within %d ms (%zu of %zu bytes came); reply channel closed", timeout_ms,
                   got, hgot == 4 ? len : 0);
  }
  return kl_fail(err, KL_ETIMEOUT, 0, "no reply from worker within %d ms", timeout_ms);
}

/* Waits up to timeout_ms until one of n workers has something on its reply channel
   (a reply, or its end: EOF and errors are for kl_proc_recv to report), draining every
   worker's output meanwhile so none blocks on a full stdout pipe. Returns the index of
   the first such worker, -1 when the time is up. A worker whose reply channel is
   closed counts as ready (kl_proc_recv then reports why). */
int kl_proc_wait_any(kl_proc *const *ps, int n, int timeout_ms) {
  if (n <= 0 || n > 256) return -1;
  int64_t deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
  for (;;) {
    struct pollfd fds[512];
    int who[512], nf = 0;
    for (int i = 0; i < n; i++) {
      kl_proc *p = ps[i];
      if (!p || p->pid <= 0 || p->from_fd < 0) return i;
      fds[nf] = (struct pollfd){.fd = p->from_fd, .events = POLLIN};
      who[nf++] = i;
      if (p->out_fd >= 0) {
        fds[nf] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
        who[nf++] = -1 - i;
      }
    }
    int64_t rem = deadline - now_ms();
    int pr = poll(fds, (nfds_t)nf, rem > 0 ? (int)rem : 0);
    if (pr < 0 && errno != EINTR) return -1;
    for (int k = 0; pr > 0 && k < nf; k++) {
      if (!fds[k].revents) continue;
      if (who[k] >= 0) return who[k];
      drain_output(ps[-1 - who[k]], 16);
    }
    if (now_ms() >= deadline) return -1;
  }
}

/* Returns KL_OK once reaped, KL_ETIMEOUT if the killed worker could not be reaped
   within KL_REAP_WAIT_MS (stuck in the driver); calling again retries the reap. */
int kl_proc_kill(kl_proc *p) {
  if (!p || p->pid <= 0) return KL_OK; /* never spawned: never kill(-0) or close fd 0 */
  int done = p->exited && p->to_fd < 0 && p->from_fd < 0 && p->out_fd < 0;
  if (done) return KL_OK;
  /* The group first (grandchildren), then the leader in case setpgid lost a race.
     An unreaped pid cannot be reused, and a just-reaped one still names our group. */
  kill(-p->pid, SIGKILL);
  if (!p->exited) kill(p->pid, SIGKILL);
  close_fd(&p->to_fd);
  close_fd(&p->from_fd);
  if (!p->exited) wait_exit(p, KL_REAP_WAIT_MS, 0);
  drain_output(p, 64);
  close_fd(&p->out_fd);
  return p->exited ? KL_OK : KL_ETIMEOUT;
}

/* Closes fd 3 so a well-behaved worker exits, waits grace_ms (draining output and
   discarding replies), then kills what is left. KL_OK if it exited on its own,
   KL_ETIMEOUT if it had to be killed. Safe to call again or after kl_proc_kill. */
int kl_proc_close(kl_proc *p, int grace_ms) {
  if (!p || p->pid <= 0) return KL_OK;
  close_fd(&p->to_fd);
  int clean = wait_exit(p, grace_ms, 1);
  kl_proc_kill(p);
  return clean ? KL_OK : KL_ETIMEOUT;
}
