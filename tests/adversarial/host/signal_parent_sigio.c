/* expect: crashed */
/* Kills the process that supervises it without a signal system call: it makes the
   supervisor the owner of its output pipe (F_SETOWN), picks SIGKILL as the pipe's
   I/O signal (F_SETSIG), turns on O_ASYNC and writes, so the kernel signals the
   owner when the supervisor drains the pipe. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  for (int fd = 1; fd <= 2; ++fd) {
    fcntl(fd, F_SETOWN, getppid());
    fcntl(fd, F_SETSIG, SIGKILL);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC);
  }
  char line[4096];
  memset(line, 'x', sizeof line);
  for (int i = 0; i < 64; ++i)
    if (write(1, line, sizeof line) < 0) break;
  usleep(200000);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
