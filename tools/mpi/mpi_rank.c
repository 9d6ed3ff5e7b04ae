/* mpi_rank.c: kloop-mpi's worker ranks: one real `kloop --worker BACKEND` per slot, relayed to rank 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kl_internal.h"
#include "kloop_mpi.h"

/*
 * A slot waits for OPEN, then for the proxy's hello line (backend, environment allow-list),
 * starts the worker through kl_proc_spawn (fds 3/4, own session, SIGKILL with this
 * process, the environment stripped to the list) and relays: rank 0's bytes to the
 * worker's fd 3, its replies and output back as chunks. When the worker ends, an END
 * chunk says how, then CLOSE. CLOSE from rank 0 (the proxy went away: the driver's
 * deadline killed it) kills the worker's whole group at once, so a hung kernel never
 * keeps this host's GPU. If rank 0 falls silent for 3x the rank timeout, every worker is
 * killed and the rank exits.
 */

enum { SLOT_IDLE, SLOT_HELLO, SLOT_RUNNING };

typedef struct slot {
  int state;
  uint32_t gen;
  char hello[4096];
  size_t hello_len;
  kl_proc p;
  km_queue toward; /* bytes for the worker's fd 3 */
} slot;

static char *saved_cvd; /* the rank's CUDA_VISIBLE_DEVICES, split among its slots */

static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static void send_end(int rank, int k, slot *s, int kind, int code, const char *what) {
  unsigned char buf[8 + 300];
  char words[300];
  int n = snprintf(words, sizeof words, "%s (rank %d, slot %d)", what, rank, k);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof words) n = sizeof words - 1;
  put32(buf, (uint32_t)kind);
  put32(buf + 4, (uint32_t)code);
  memcpy(buf + 8, words, (size_t)n);
  km_send_chunk(0, k, s->gen, KL_RELAY_END, buf, 8 + (size_t)n);
  km_send(0, k, KM_CLOSE, s->gen, NULL, 0);
}

/* Kills the slot's worker (if any) and forgets the connection. */
static void reset_slot(slot *s) {
  if (s->state == SLOT_RUNNING) kl_proc_kill(&s->p);
  km_queue_clear(&s->toward);
  s->state = SLOT_IDLE;
  s->hello_len = 0;
}

/* The worker closed its reply channel: reap it, send what it printed last and how it ended. */
static void finish_worker(int rank, int k, slot *s) {
  kl_proc_close(&s->p, 2000);
  if (s->p.tail_len) km_send_chunk(0, k, s->gen, KL_RELAY_OUTPUT, s->p.tail, s->p.tail_len);
  int st = s->p.exit_status;
  char what[128];
  if (s->p.exited && st != -1 && WIFSIGNALED(st)) {
    snprintf(what, sizeof what, "worker killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    send_end(rank, k, s, KL_RELAY_SIGNALED, WTERMSIG(st), what);
  } else {
    int code = s->p.exited && st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    snprintf(what, sizeof what, "worker exited with status %d", code);
    send_end(rank, k, s, KL_RELAY_EXITED, code, what);
  }
  km_queue_clear(&s->toward);
  s->state = SLOT_IDLE;
}

static int word_ok(const char *w, int allow_upper) {
  if (!*w) return 0;
  for (; *w; w++)
    if (!((*w >= 'a' && *w <= 'z') || (*w >= '0' && *w <= '9') || *w == '_' ||
          (allow_upper && *w >= 'A' && *w <= 'Z')))
      return 0;
  return 1;
}

/* CUDA workers: slot k gets the k-th of the rank's visible GPUs (or GPU k). */
static void pick_gpu(int k) {
  char buf[32];
  if (!saved_cvd || !*saved_cvd) {
    snprintf(buf, sizeof buf, "%d", k);
    setenv("CUDA_VISIBLE_DEVICES", buf, 1);
    return;
  }
  int count = 1;
  for (const char *c = saved_cvd; *c; c++) count += *c == ',';
  int want = k % count, i = 0;
  const char *start = saved_cvd;
  for (const char *c = saved_cvd;; c++) {
    if (*c == ',' || !*c) {
      if (i++ == want) {
        size_t n = (size_t)(c - start) < sizeof buf - 1 ? (size_t)(c - start) : sizeof buf - 1;
        memcpy(buf, start, n);
        buf[n] = 0;
        setenv("CUDA_VISIBLE_DEVICES", buf, 1);
        return;
      }
      if (!*c) return;
      start = c + 1;
    }
  }
}

/* The hello line is complete in s->hello: start the worker, or report why not. */
static void start_worker(int rank, int k, slot *s, const char *kloop) {
  char *nl = memchr(s->hello, '\n', s->hello_len);
  size_t rest = s->hello_len - (size_t)(nl - s->hello) - 1;
  *nl = 0;
  char *save = NULL, *magic = strtok_r(s->hello, " ", &save), *ver = strtok_r(NULL, " ", &save);
  char *backend = strtok_r(NULL, " ", &save), *list = strtok_r(NULL, " ", &save);
  if (!magic || strcmp(magic, "kloop-relay") || !ver || strcmp(ver, "1") || !backend ||
      !word_ok(backend, 0)) {
    send_end(rank, k, s, KL_RELAY_EXITED, 2, "kloop-mpi: a bad hello from the proxy");
    s->state = SLOT_IDLE;
    return;
  }
  const char *keep[64];
  int nk = 0;
  for (char *w = list ? strtok_r(list, ",", &save) : NULL; w && nk < 63; w = strtok_r(NULL, ",", &save))
    if (word_ok(w, 1)) keep[nk++] = w;
  keep[nk] = NULL;
  if (!strcmp(backend, "cuda")) pick_gpu(k);
  const char *argv[] = {kloop, "--worker", backend, NULL};
  kl_err err = {0};
  if (kl_proc_spawn(&s->p, argv, keep, &err) != KL_OK) {
    send_end(rank, k, s, KL_RELAY_EXITED, 127, err.msg);
    s->state = SLOT_IDLE;
    return;
  }
  s->state = SLOT_RUNNING;
  if (rest) km_queue_push(&s->toward, nl + 1, rest);
}

static void on_data(int rank, int k, slot *s, const char *kloop, const char *data, size_t n) {
  if (s->state == SLOT_RUNNING) {
    km_queue_push(&s->toward, data, n);
    return;
  }
  if (s->state != SLOT_HELLO) return;
  if (s->hello_len + n > sizeof s->hello) {
    send_end(rank, k, s, KL_RELAY_EXITED, 2, "kloop-mpi: the proxy's hello is too long");
    s->state = SLOT_IDLE;
    return;
  }
  memcpy(s->hello + s->hello_len, data, n);
  s->hello_len += n;
  if (memchr(s->hello, '\n', s->hello_len)) start_worker(rank, k, s, kloop);
}

/* Reads what the worker wrote on fd (replies or output) and sends it as one chunk. */
static int pump(int rank, int k, slot *s, int fd, int type) {
  char buf[KM_IO];
  ssize_t r = read(fd, buf, sizeof buf);
  if (r > 0) {
    km_send_chunk(0, k, s->gen, type, buf, (size_t)r);
    return 1;
  }
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  (void)rank;
  return 0;
}

int km_rank_main(int rank, int k, const char *kloop, double timeout_s) {
  signal(SIGPIPE, SIG_IGN);
  saved_cvd = getenv("CUDA_VISIBLE_DEVICES") ? strdup(getenv("CUDA_VISIBLE_DEVICES")) : NULL;
  slot *slots = calloc((size_t)k, sizeof *slots);
  if (!slots) return 1;
  double seen0 = km_now(), beat = 0, busy = km_now();
  int quit = 0, rc = 0, skip_finalize = 0;
  while (!quit) {
    struct pollfd fds[3 * 64];
    int who[3 * 64], nf = 0;
    for (int i = 0; i < k && nf + 3 <= 3 * 64; i++) {
      slot *s = &slots[i];
      if (s->state != SLOT_RUNNING) continue;
      if (s->p.from_fd >= 0) fds[nf] = (struct pollfd){.fd = s->p.from_fd, .events = POLLIN}, who[nf++] = i;
      if (s->p.out_fd >= 0) fds[nf] = (struct pollfd){.fd = s->p.out_fd, .events = POLLIN}, who[nf++] = i;
      if (s->p.to_fd >= 0 && s->toward.len)
        fds[nf] = (struct pollfd){.fd = s->p.to_fd, .events = POLLOUT}, who[nf++] = i;
    }
    int nap = km_now() - busy < 0.1 ? 1 : 10;
    int pr = poll(fds, (nfds_t)nf, nap);
    for (int j = 0; pr > 0 && j < nf; j++) {
      if (!fds[j].revents) continue;
      slot *s = &slots[who[j]];
      if (s->state != SLOT_RUNNING) continue;
      busy = km_now();
      if (fds[j].fd == s->p.from_fd) {
        if (!pump(rank, who[j], s, s->p.from_fd, KL_RELAY_DATA)) finish_worker(rank, who[j], s);
      } else if (fds[j].fd == s->p.out_fd) {
        if (!pump(rank, who[j], s, s->p.out_fd, KL_RELAY_OUTPUT)) {
          close(s->p.out_fd);
          s->p.out_fd = -1;
        }
      } else if (km_queue_flush(&s->toward, s->p.to_fd, 0) < 0) {
        km_queue_clear(&s->toward); /* the worker is gone; its reply channel says so */
      }
    }
    int src, sl, kind;
    uint32_t gen;
    char *data;
    size_t n;
    for (int m = 0; m < 64 && km_recv(&src, &sl, &kind, &gen, &data, &n); m++) {
      busy = seen0 = km_now();
      if (kind == KM_QUIT) {
        quit = 1;
        if (n >= 1 && data && data[0]) skip_finalize = 1; /* rank 0 lost a rank */
      }
      if (sl >= 0 && sl < k && kind != KM_BEAT && kind != KM_QUIT) {
        slot *s = &slots[sl];
        if (kind == KM_OPEN) {
          reset_slot(s);
          s->gen = gen;
          s->state = SLOT_HELLO;
        } else if (gen == s->gen && kind == KM_DATA) {
          on_data(rank, sl, s, kloop, data, n);
        } else if (gen == s->gen && kind == KM_CLOSE) {
          reset_slot(s);
        }
        if (s->state == SLOT_RUNNING && s->toward.len && km_queue_flush(&s->toward, s->p.to_fd, 0) < 0)
          km_queue_clear(&s->toward);
      }
      free(data);
    }
    km_progress();
    double now = km_now();
    if (now - beat >= KM_BEAT_MS / 1000.0) {
      km_send(0, 0, KM_BEAT, 0, NULL, 0);
      beat = now;
    }
    if (now - seen0 > 3 * timeout_s) {
      fprintf(stderr, "kloop-mpi rank %d: no word from rank 0 for %.0f s: stopping my workers\n", rank,
              now - seen0);
      rc = 1;
      skip_finalize = 1; /* rank 0 cannot join MPI_Finalize */
      break;
    }
  }
  for (int i = 0; i < k; i++) reset_slot(&slots[i]);
  free(slots);
  return skip_finalize ? -1 - rc : rc;
}
