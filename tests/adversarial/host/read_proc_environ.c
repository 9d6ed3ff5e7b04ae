/* expect: ok */
/* Reads the supervisor's environment through /proc (where the API key lives), by
   pid and through a path that climbs out of /proc/self. It computes correctly only
   when every read failed, so a leak shows as `wrong`. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
static int readable(const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0;
}
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  char path[64];
  int leaked = 0;
  snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
  leaked |= readable(path);
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid());
  leaked |= readable(path);
  leaked |= readable("/proc/self/../1/environ");
  leaked |= readable("/proc/1/environ");
  leaked |= readable("/proc/self/environ");
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (leaked) C[0] += 1.0f;
}
