/* kloop_mpi.h: what kloop-mpi's two halves share: message tags, byte queues, MPI sends. */
#ifndef KLOOP_MPI_H
#define KLOOP_MPI_H
#include <stddef.h>
#include <stdint.h>

/*
 * Rank 0 and a worker rank talk in small messages, each tagged with a worker slot and a
 * kind; the payload starts with the connection's generation (u32), so bytes of an ended
 * connection that are still in flight are dropped. OPEN/DATA/CLOSE run one connection
 * (rank 0 -> rank: the proxy's bytes; rank -> rank 0: chunks for the proxy, kloop.h's
 * kl_relay_chunk); BEAT says a rank is alive; QUIT ends a rank.
 */
enum { KM_OPEN = 1, KM_DATA = 2, KM_CLOSE = 3, KM_BEAT = 4, KM_QUIT = 5 };
enum { KM_KINDS = 8, KM_IO = 65536, KM_BEAT_MS = 250 };

static inline int km_tag(int slot, int kind) { return slot * KM_KINDS + kind; }

typedef struct km_queue {
  char *buf;
  size_t off, len, cap;
} km_queue;

int km_queue_push(km_queue *q, const void *data, size_t n); /* 0, or -1 out of memory */
int km_queue_flush(km_queue *q, int fd, int is_sock);       /* 0, or -1: the fd is broken */
void km_queue_clear(km_queue *q);

double km_now(void);
/* Copies and sends [gen][data] without blocking; the copy lives until MPI is done with it. */
int km_send(int dest, int slot, int kind, uint32_t gen, const void *data, size_t n);
/* Sends a chunk (kloop.h: type byte, length, payload) as a DATA message. */
int km_send_chunk(int dest, int slot, uint32_t gen, int type, const void *data, size_t n);
void km_progress(void);         /* completes what MPI finished sending */
void km_forget_sends(int dest); /* a lost rank: its sends will never complete */
int km_pending(void);
/* One waiting message (any source), or 0. *data is malloc'd: [gen] stripped off. */
int km_recv(int *src, int *slot, int *kind, uint32_t *gen, char **data, size_t *n);

/* A worker rank's loop (mpi_rank.c): runs `kloop --worker BACKEND` for each of its k slots. Returns
   its status, or -1 - status when MPI_Finalize cannot complete (rank 0 lost a rank, or
   went silent itself): the caller then exits without it. */
int km_rank_main(int rank, int k, const char *kloop, double timeout_s);

#endif
