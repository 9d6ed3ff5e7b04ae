/* kloop_mpi.c: kloop-mpi, the launcher for workers on other hosts: rank 0 runs the search, the others its
 * workers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kl_internal.h"
#include "kloop_mpi.h"

/*
 * Usage: mpirun -n N kloop-mpi [--workers-per-rank K] [--rank-timeout S] STRATEGY TASK [kloop options...]
 *
 * Rank 0 makes one Unix socket per worker slot (ranks 1..N-1, K each) in a private folder
 * and runs `kloop STRATEGY TASK [options] --remote-workers S1,S2,...` as its child: the
 * strategy, the store and the LLM client stay in that process. Each connection to a slot
 * (a `kloop --worker-remote` proxy) is relayed to its rank as OPEN, DATA..., CLOSE. A rank
 * that stays silent for the rank timeout is lost: its connections are closed (the driver
 * sees those workers crash and retries their candidates elsewhere) and its sockets are
 * removed, so a new connection to them fails at once. kloop-mpi exits with the search's
 * status (mpirun passes it on only in its default mode: docs/SCALE.md).
 */

/* ---- shared with mpi_rank.c ---- */

double km_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int km_queue_push(km_queue *q, const void *data, size_t n) {
  if (q->off && q->off == q->len) q->off = q->len = 0;
  if (q->len + n > q->cap) {
    if (q->off) {
      memmove(q->buf, q->buf + q->off, q->len - q->off);
      q->len -= q->off, q->off = 0;
    }
    size_t cap = q->cap ? q->cap : KM_IO;
    while (cap < q->len + n) cap *= 2;
    char *nb = realloc(q->buf, cap);
    if (!nb) return -1;
    q->buf = nb, q->cap = cap;
  }
  memcpy(q->buf + q->len, data, n);
  q->len += n;
  return 0;
}

int km_queue_flush(km_queue *q, int fd, int is_sock) {
  while (q->off < q->len) {
    ssize_t w = is_sock ? send(fd, q->buf + q->off, q->len - q->off, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : write(fd, q->buf + q->off, q->len - q->off);
    if (w > 0) q->off += (size_t)w;
    else if (w < 0 && errno == EINTR) continue;
    else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    else return -1;
  }
  q->off = q->len = 0;
  return 0;
}

void km_queue_clear(km_queue *q) {
  free(q->buf);
  memset(q, 0, sizeof *q);
}

typedef struct km_out {
  MPI_Request req;
  int dest;
  char *buf;
} km_out;
static km_out *outs;
static int nouts, capouts;

int km_send(int dest, int slot, int kind, uint32_t gen, const void *data, size_t n) {
  if (nouts == capouts) {
    int cap = capouts ? capouts * 2 : 64;
    km_out *no = realloc(outs, (size_t)cap * sizeof *no);
    if (!no) return -1;
    outs = no, capouts = cap;
  }
  char *buf = malloc(4 + n);
  if (!buf) return -1;
  memcpy(buf, &gen, 4);
  if (n) memcpy(buf + 4, data, n);
  km_out *o = &outs[nouts];
  if (MPI_Isend(buf, (int)(4 + n), MPI_BYTE, dest, km_tag(slot, kind), MPI_COMM_WORLD, &o->req) !=
      MPI_SUCCESS) {
    free(buf);
    return -1;
  }
  o->dest = dest, o->buf = buf;
  nouts++;
  return 0;
}

int km_send_chunk(int dest, int slot, uint32_t gen, int type, const void *data, size_t n) {
  char *buf = malloc(5 + n);
  if (!buf) return -1;
  buf[0] = (char)type;
  for (int i = 0; i < 4; i++) buf[1 + i] = (char)((uint32_t)n >> (8 * i));
  if (n) memcpy(buf + 5, data, n);
  int rc = km_send(dest, slot, KM_DATA, gen, buf, 5 + n);
  free(buf);
  return rc;
}

void km_progress(void) {
  for (int i = 0; i < nouts;) {
    int done = 0;
    if (MPI_Test(&outs[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;
    if (done) {
      free(outs[i].buf);
      outs[i] = outs[--nouts];
    } else {
      i++;
    }
  }
}

void km_forget_sends(int dest) {
  /* Never completed, never freed: MPI may still hold the buffer. */
  for (int i = 0; i < nouts;) {
    if (outs[i].dest == dest) outs[i] = outs[--nouts];
    else i++;
  }
}

int km_pending(void) { return nouts; }

int km_recv(int *src, int *slot, int *kind, uint32_t *gen, char **data, size_t *n) {
  int flag = 0, count = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) return 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  char *buf = malloc((size_t)count + 1);
  if (!buf) return 0;
  if (MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS ||
      count < 4) {
    free(buf);
    return 0;
  }
  *src = st.MPI_SOURCE, *slot = st.MPI_TAG / KM_KINDS, *kind = st.MPI_TAG % KM_KINDS;
  memcpy(gen, buf, 4);
  memmove(buf, buf + 4, (size_t)count - 4);
  *data = buf, *n = (size_t)count - 4;
  return 1;
}

/* ---- rank 0 ---- */

typedef struct conn_slot {
  int rank, k;  /* the worker rank and its slot there */
  int lfd, cfd; /* listening socket, the live connection (or -1) */
  int closing;  /* the rank said CLOSE: close once the queue is written */
  uint32_t gen;
  char path[108];
  km_queue toward; /* chunks for the proxy */
} conn_slot;

static volatile sig_atomic_t stop_sig;
static void on_stop(int sig) { stop_sig = sig; }

static void usage(FILE *f) {
  fprintf(
    f,
    "usage: mpirun -n N kloop-mpi [--workers-per-rank K] [--rank-timeout S] STRATEGY TASK [kloop options...]\n"
    "  rank 0 runs `kloop STRATEGY TASK [options] --remote-workers ...`; ranks 1..N-1 run K workers each\n"
    "  (default 1; CUDA: slot k uses the rank's k-th visible GPU). A rank silent for S seconds\n"
    "  (default 5) is lost and its workers are left out. The search's exit status is kloop-mpi's.\n"
    "  Under mpirun, add --mca orte_enable_recovery 1 so that a dead rank does not end the job\n"
    "  (docs/SCALE.md). KLOOP_MPI_KLOOP names the kloop binary (default: next to kloop-mpi).\n");
}

static void end_conn(conn_slot *c, int tell_rank) {
  if (c->cfd >= 0) close(c->cfd);
  c->cfd = -1;
  c->closing = 0;
  km_queue_clear(&c->toward);
  if (tell_rank) km_send(c->rank, c->k, KM_CLOSE, c->gen, NULL, 0);
}

static int listen_on(conn_slot *c) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
  c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(c->lfd, 4) < 0) {
    fprintf(stderr, "kloop-mpi: cannot listen on %s: %s\n", c->path, strerror(errno));
    return -1;
  }
  return 0;
}

static pid_t start_driver(const char *kloop, int argc, char **argv, const char *socks) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  /* The search's own process: it stops cleanly (SIGINT: `done` runs, the store stays
     consistent) if rank 0 dies, and keeps none of MPI's descriptors. Its own process
     group: mpirun tearing the job down kills rank 0's group with SIGKILL, which would
     leave the run unfinished in the store. */
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGINT);
#ifdef SYS_close_range
  syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
  char **av = calloc((size_t)argc + 4, sizeof *av);
  int n = 0;
  av[n++] = (char *)kloop;
  for (int i = 0; i < argc; i++) av[n++] = argv[i];
  av[n++] = "--remote-workers";
  av[n++] = (char *)socks;
  av[n] = NULL;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  execv(kloop, av);
  fprintf(stderr, "kloop-mpi: cannot run %s: %s\n", kloop, strerror(errno));
  _exit(127);
}

static void lose_rank(conn_slot *cs, int ncs, int rank, double silent) {
  int n = 0;
  for (int i = 0; i < ncs; i++) {
    if (cs[i].rank != rank) continue;
    end_conn(&cs[i], 0);
    if (cs[i].lfd >= 0) close(cs[i].lfd);
    cs[i].lfd = -1;
    unlink(cs[i].path);
    n++;
  }
  km_forget_sends(rank);
  fprintf(stderr, "kloop-mpi: rank %d lost (silent for %.1f s): its %d worker slot%s closed\n", rank, silent,
          n, n == 1 ? "" : "s");
}

static int run_rank0(int size, int k, double timeout_s, const char *kloop, int argc, char **argv) {
  char dir[PATH_MAX];
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(dir, sizeof dir, "%s/kloop-mpi.XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "kloop-mpi: cannot make a folder for the sockets under %s: %s\n", tmp, strerror(errno));
    return 1;
  }
  int ncs = (size - 1) * k;
  conn_slot *cs = calloc((size_t)ncs, sizeof *cs);
  char *socks = calloc((size_t)ncs, sizeof cs[0].path + 1);
  double *seen = calloc((size_t)size, sizeof *seen);
  int *lost = calloc((size_t)size, sizeof *lost);
  if (!cs || !socks || !seen || !lost) return 1;
  int rc = 0;
  for (int i = 0; i < ncs && !rc; i++) {
    conn_slot *c = &cs[i];
    c->rank = 1 + i / k, c->k = i % k, c->cfd = -1;
    if ((size_t)snprintf(c->path, sizeof c->path, "%s/r%dw%d.sock", dir, c->rank, c->k) >= sizeof c->path) {
      fprintf(stderr, "kloop-mpi: socket path too long under %s (set TMPDIR shorter)\n", dir);
      rc = 1;
    } else if (listen_on(c) < 0) {
      rc = 1;
    }
    if (i) strcat(socks, ",");
    strcat(socks, c->path);
  }
  pid_t driver = rc ? -1 : start_driver(kloop, argc, argv, socks);
  if (driver < 0) rc = 1;
  signal(SIGINT, on_stop);
  signal(SIGTERM, on_stop);
  signal(SIGPIPE, SIG_IGN);
  double now = km_now(), beat = 0, busy = now;
  for (int r = 1; r < size; r++) seen[r] = now;
  int status = 0, nlost = 0;
  while (driver > 0) {
    if (stop_sig) {
      kill(driver, SIGINT); /* the search stops cleanly; we wait for it */
      stop_sig = 0;
    }
    pid_t w = waitpid(driver, &status, WNOHANG);
    if (w == driver) break;
    struct pollfd fds[2 * 1024];
    int who[2 * 1024], nf = 0;
    for (int i = 0; i < ncs && nf + 2 <= 2 * 1024; i++) {
      conn_slot *c = &cs[i];
      if (c->lfd >= 0) fds[nf] = (struct pollfd){.fd = c->lfd, .events = POLLIN}, who[nf++] = i;
      if (c->cfd >= 0)
        fds[nf] = (struct pollfd){.fd = c->cfd, .events = POLLIN | (c->toward.len ? POLLOUT : 0)},
        who[nf++] = i;
    }
    int pr = poll(fds, (nfds_t)nf, km_now() - busy < 0.1 ? 1 : 10);
    for (int j = 0; pr > 0 && j < nf; j++) {
      conn_slot *c = &cs[who[j]];
      if (!fds[j].revents) continue;
      busy = km_now();
      if (fds[j].fd == c->lfd) {
        int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) continue;
        if (c->cfd >= 0) end_conn(c, 1); /* a restarted worker: the newest connection wins */
        c->cfd = fd;
        c->gen++;
        km_send(c->rank, c->k, KM_OPEN, c->gen, NULL, 0);
        continue;
      }
      if (fds[j].fd != c->cfd) continue;
      if (fds[j].revents & POLLOUT) {
        if (km_queue_flush(&c->toward, c->cfd, 1) < 0) {
          end_conn(c, 1);
          continue;
        }
        if (c->closing && !c->toward.len) {
          end_conn(c, 0);
          continue;
        }
      }
      if (fds[j].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[KM_IO];
        ssize_t r = recv(c->cfd, buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0) km_send(c->rank, c->k, KM_DATA, c->gen, buf, (size_t)r);
        else if (r == 0 || (errno != EINTR && errno != EAGAIN)) end_conn(c, 1); /* the proxy is gone */
      }
    }
    int src, sl, kind;
    uint32_t gen;
    char *data;
    size_t n;
    for (int m = 0; m < 64 && km_recv(&src, &sl, &kind, &gen, &data, &n); m++) {
      busy = km_now();
      if (src > 0 && src < size && !lost[src]) seen[src] = busy;
      int i = (src - 1) * k + sl;
      if (src > 0 && src < size && !lost[src] && sl >= 0 && sl < k && cs[i].cfd >= 0 && gen == cs[i].gen) {
        conn_slot *c = &cs[i];
        if (kind == KM_DATA) km_queue_push(&c->toward, data, n);
        if (kind == KM_CLOSE) c->closing = 1;
        if (km_queue_flush(&c->toward, c->cfd, 1) < 0) end_conn(c, 0);
        else if (c->closing && !c->toward.len) end_conn(c, 0);
      }
      free(data);
    }
    km_progress();
    now = km_now();
    if (now - beat >= KM_BEAT_MS / 1000.0) {
      beat = now;
      for (int r = 1; r < size; r++) {
        if (lost[r]) continue;
        if (now - seen[r] > timeout_s) {
          lost[r] = 1;
          nlost++;
          lose_rank(cs, ncs, r, now - seen[r]);
        } else {
          km_send(r, 0, KM_BEAT, 0, NULL, 0);
        }
      }
    }
  }
  /* A rank that died shortly before the search ended has not been found out yet, and
     MPI_Finalize would wait for it forever: every rank must be heard from (its
     heartbeat) after the end, within the rank timeout, or it counts as lost. */
  double t_end = km_now();
  for (int left = 1; left;) {
    int src, sl, kind;
    uint32_t gen;
    char *data;
    size_t n;
    while (km_recv(&src, &sl, &kind, &gen, &data, &n)) {
      if (src > 0 && src < size) seen[src] = km_now();
      free(data);
    }
    km_progress();
    left = 0;
    for (int r = 1; r < size; r++) {
      if (lost[r] || seen[r] > t_end) continue;
      if (km_now() - t_end > timeout_s) {
        lost[r] = 1;
        nlost++;
        lose_rank(cs, ncs, r, km_now() - seen[r]);
      } else {
        left = 1;
      }
    }
    if (left) usleep(1000);
  }
  /* the quit says whether a rank was lost: then no rank may call MPI_Finalize, which
     would wait for the lost one forever (a surviving worker rank hung there) */
  char lost_any = nlost ? 1 : 0;
  for (int r = 1; r < size; r++)
    if (!lost[r]) km_send(r, 0, KM_QUIT, 0, &lost_any, 1);
  for (double t0 = km_now(); km_pending() && km_now() - t0 < 2.0;) {
    km_progress();
    usleep(1000);
  }
  for (int i = 0; i < ncs; i++) {
    end_conn(&cs[i], 0);
    if (cs[i].lfd >= 0) close(cs[i].lfd);
    unlink(cs[i].path);
  }
  rmdir(dir);
  int code = rc                    ? rc
             : WIFEXITED(status)   ? WEXITSTATUS(status)
             : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                   : 1;
  if (nlost || code)
    fprintf(stderr, "kloop-mpi: the search exited with status %d (%d of %d worker rank%s lost)\n", code,
            nlost, size - 1, size == 2 ? "" : "s");
  free(cs), free(socks), free(seen), free(lost);
  return nlost ? -1 - code : code; /* < 0: skip MPI_Finalize, a lost rank cannot join it */
}

/* kloop next to this binary, or $KLOOP_MPI_KLOOP. */
static int find_kloop(char *out, size_t n) {
  const char *env = getenv("KLOOP_MPI_KLOOP");
  if (env && *env) {
    snprintf(out, n, "%s", env);
  } else {
    ssize_t r = readlink("/proc/self/exe", out, n - 7);
    if (r <= 0) return -1;
    out[r] = 0;
    char *slash = strrchr(out, '/');
    if (!slash) return -1;
    strcpy(slash + 1, "kloop");
  }
  return access(out, X_OK);
}

int main(int argc, char **argv) {
  int k = 1, i = 1;
  double timeout_s = 5.0;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--workers-per-rank") && i + 1 < argc) {
      k = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--rank-timeout") && i + 1 < argc) {
      timeout_s = atof(argv[++i]);
    } else {
      break;
    }
  }
  if (argc - i < 2 || k < 1 || k > 64 || timeout_s <= 0) {
    usage(stderr);
    return 2;
  }
  char kloop[PATH_MAX];
  if (find_kloop(kloop, sizeof kloop) < 0) {
    fprintf(stderr, "kloop-mpi: cannot find kloop (%s): set KLOOP_MPI_KLOOP\n", kloop);
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code;
  if (size < 2) {
    fprintf(stderr, "kloop-mpi: needs 2 ranks or more (rank 0 runs the search, the others its workers)\n");
    code = 2;
  } else if (rank == 0) {
    /* Started by mpirun (its daemon's URI is in our environment), which by default ends
       the job when one rank dies; kloop-mpi can survive that only in recovery mode. */
    const char *rec = getenv("OMPI_MCA_orte_enable_recovery"),
               *ab = getenv("OMPI_MCA_orte_abort_on_non_zero_status");
    if (getenv("OMPI_MCA_orte_hnp_uri") && !(rec && (!strcmp(rec, "1") || !strcmp(rec, "true"))) &&
        !(ab && (!strcmp(ab, "0") || !strcmp(ab, "false"))))
      fprintf(stderr,
              "kloop-mpi: mpirun will end the whole job if a rank dies: add --mca orte_enable_recovery 1"
              " (docs/SCALE.md)\n");
    code = run_rank0(size, k, timeout_s, kloop, argc - i, argv + i);
    if (code < 0) {
      fflush(NULL);
      _exit(-1 - code);
    }
  } else {
    code = km_rank_main(rank, k, kloop, timeout_s);
    if (code < 0) { /* a rank is lost (or rank 0 went silent): MPI_Finalize cannot complete */
      fflush(NULL);
      _exit(-1 - code);
    }
  }
  MPI_Finalize();
  return code;
}
