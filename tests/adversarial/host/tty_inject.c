/* expect: crashed */
/* Pushes a line into the terminal's input queue (TIOCSTI) on fds 0, 1, 2 and on
   /dev/tty, for the shell to run after kloop exits. The injected text is a comment,
   so an escape is visible but harmless; tests/cli/host_tty.t looks for it. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
static const char line[] = "#kloop-tty-injected\n";
static int inject(int fd) {
  int ok = 0;
  for (const char *p = line; *p; ++p) ok |= ioctl(fd, TIOCSTI, p) == 0;
  return ok;
}
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int reached = inject(0) | inject(1) | inject(2);
  int t = open("/dev/tty", O_RDONLY | O_NOCTTY);
  if (t >= 0) { reached |= inject(t); close(t); }
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (reached) C[0] += 1.0f; /* a terminal was reached: make it show as wrong */
}
