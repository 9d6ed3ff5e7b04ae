/* expect: crashed */
/* Kills the process that supervises it with rt_sigqueueinfo (sigqueue) and
   rt_tgsigqueueinfo. */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  pid_t p = getppid();
  union sigval v = {0};
  sigqueue(p, SIGKILL, v);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = SIGKILL;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  syscall(SYS_rt_tgsigqueueinfo, p, p, SIGKILL, &si);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
}
