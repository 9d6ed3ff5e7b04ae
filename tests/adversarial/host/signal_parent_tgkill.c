/* expect: crashed */
/* Kills the process that supervises it with tgkill (kill and tkill are refused by name). */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  pid_t p = getppid();
  syscall(SYS_tgkill, p, p, SIGKILL);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
