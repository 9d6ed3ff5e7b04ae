/* expect: crashed */
/* Kills the process that supervises it through a pidfd (pidfd_open + pidfd_send_signal). */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  long fd = syscall(SYS_pidfd_open, getppid(), 0);
  if (fd >= 0) syscall(SYS_pidfd_send_signal, (int)fd, SIGKILL, NULL, 0);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
