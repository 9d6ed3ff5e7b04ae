/* kl_relay.c: the proxy side of a remote worker: fds 3/4 of `kloop --worker-remote` to a kloop-mpi socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "kl_internal.h"

/*
 * The driver sees this process as its worker: it writes frames on in_fd and reads
 * replies on out_fd. Requests go to the socket unchanged (kloop-mpi forwards the bytes
 * to the rank that runs the real worker); what comes back is chunked (kloop.h,
 * kl_relay_chunk) so the worker's output and its end travel beside the replies. The
 * driver's deadline kills this process with SIGKILL: the socket then closes and
 * kloop-mpi kills the real worker. A connection that ends without an END chunk (the
 * rank died, kloop-mpi went away) is reported as lost, and this process exits, which the
 * driver sees as a crashed worker.
 */

#define RELAY_CHUNK 65536
#define RELAY_CHUNK_MAX ((size_t)257 << 20) /* a 256 MiB frame plus its header */

/* Writes all of buf, waiting for room; -1 with errno on failure (EPIPE: reader gone). */
static int write_all(int fd, const char *buf, size_t n, int is_sock) {
  while (n > 0) {
    ssize_t w = is_sock ? send(fd, buf, n, MSG_NOSIGNAL) : write(fd, buf, n);
    if (w > 0) {
      buf += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

static uint32_t get_le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void set_end(kl_relay_end *end, int kind, int code, const char *what) {
  end->kind = kind;
  end->code = code;
  snprintf(end->what, sizeof end->what, "%s", what);
}

/* Handles the complete chunks at the front of buf; returns bytes consumed, or -1 once an
   END chunk (or a malformed one) has filled end. */
static ssize_t take_chunks(const char *buf, size_t len, int out_fd, int log_fd, kl_relay_end *end) {
  size_t off = 0;
  while (len - off >= 5) {
    const unsigned char *h = (const unsigned char *)buf + off;
    size_t n = get_le32(h + 1);
    if (n + 5 > RELAY_CHUNK_MAX) {
      set_end(end, KL_RELAY_LOST, 0, "the remote side sent a malformed chunk");
      return -1;
    }
    if (len - off < 5 + n) break;
    const char *pay = buf + off + 5;
    if (h[0] == KL_RELAY_DATA) {
      /* the driver gone (EPIPE) ends us below, through in_fd's EOF */
      if (write_all(out_fd, pay, n, 0) < 0) {
        set_end(end, KL_RELAY_LOST, 0, "the driver closed the reply channel");
        return -1;
      }
    } else if (h[0] == KL_RELAY_OUTPUT) {
      if (log_fd >= 0) (void)write_all(log_fd, pay, n, 0);
    } else if (h[0] == KL_RELAY_END && n >= 8) {
      const unsigned char *p = (const unsigned char *)pay;
      char what[256];
      size_t wn = n - 8 < sizeof what - 1 ? n - 8 : sizeof what - 1;
      memcpy(what, pay + 8, wn);
      what[wn] = 0;
      set_end(end, (int)get_le32(p), (int)get_le32(p + 4), what);
      return -1;
    } else {
      set_end(end, KL_RELAY_LOST, 0, "the remote side sent a malformed chunk");
      return -1;
    }
    off += 5 + n;
  }
  return (ssize_t)off;
}

static int connect_unix(const char *path, kl_err *err) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return -kl_fail(err, KL_EINVAL, 0, "socket path too long (%zu bytes): %s", strlen(path), path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -kl_fail_errno(err, "socket");
  int rc;
  do rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -kl_fail(err, e == ENOENT || e == ECONNREFUSED ? KL_ECLOSED : KL_ESYS, e,
                    "cannot connect to %s: %s", path, strerror(e));
  }
  return fd;
}

int kl_relay_run(const char *sock_path, const char *hello, int in_fd, int out_fd, int log_fd,
                 kl_relay_end *end, kl_err *err) {
  if (!sock_path || !hello || !end || in_fd < 0 || out_fd < 0)
    return kl_fail(err, KL_EINVAL, 0, "kl_relay_run: bad arguments");
  set_end(end, KL_RELAY_LOST, 0,
          "the connection closed before the worker's end was reported (its rank died, or kloop-mpi ended)");
  int sock = connect_unix(sock_path, err);
  if (sock < 0) return -sock;
  if (write_all(sock, hello, strlen(hello), 1) < 0) {
    int rc = kl_fail_errno(err, "sending the hello to %s", sock_path);
    close(sock);
    return rc;
  }
  size_t cap = RELAY_CHUNK * 2, len = 0;
  char *buf = malloc(cap);
  char io[RELAY_CHUNK];
  if (!buf) {
    close(sock);
    return kl_fail(err, KL_ENOMEM, 0, "out of memory for the relay buffer");
  }
  int in_open = 1;
  for (;;) {
    struct pollfd fds[2] = {{.fd = sock, .events = POLLIN}, {.fd = in_open ? in_fd : -1, .events = POLLIN}};
    int pr = poll(fds, 2, -1);
    if (pr < 0) {
      if (errno == EINTR) continue;
      set_end(end, KL_RELAY_LOST, errno, "poll failed in the relay");
      break;
    }
    if (fds[1].revents) {
      ssize_t r = read(in_fd, io, sizeof io);
      if (r > 0) {
        if (write_all(sock, io, (size_t)r, 1) < 0) {
          set_end(end, KL_RELAY_LOST, errno, "the connection to the remote worker broke");
          break;
        }
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        /* The driver closed its request channel (quit, or it is gone): the connection is
           over; closing the socket makes kloop-mpi end the real worker. */
        in_open = 0;
        set_end(end, KL_RELAY_EXITED, 0, "the driver closed the channel");
        break;
      }
    }
    if (fds[0].revents) {
      if (cap - len < RELAY_CHUNK) {
        size_t ncap = cap * 2;
        char *nb = ncap <= RELAY_CHUNK_MAX * 2 ? realloc(buf, ncap) : NULL;
        if (!nb) {
          set_end(end, KL_RELAY_LOST, 0, "out of memory in the relay");
          break;
        }
        buf = nb, cap = ncap;
      }
      ssize_t r = recv(sock, buf + len, cap - len, 0);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) break; /* end stays "lost" unless an END chunk came first */
      len += (size_t)r;
      ssize_t used = take_chunks(buf, len, out_fd, log_fd, end);
      if (used < 0) break;
      memmove(buf, buf + used, len - (size_t)used);
      len -= (size_t)used;
    }
  }
  free(buf);
  close(sock);
  return KL_OK;
}

int kl_relay_die(int signo) {
  if (signo <= 0 || signo >= 65) return KL_EINVAL;
  struct rlimit none = {0, 0};
  setrlimit(RLIMIT_CORE, &none);
  signal(signo, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, signo);
  sigprocmask(SIG_UNBLOCK, &s, NULL);
  raise(signo);
  return KL_ESYS;
}
