/* expect: crashed */
/* Changes the times and extended attributes of a file it can open read-only: its own
   shared object (found through dladdr, so nothing outside kloop's cache is touched
   even where the suite runs as root). Any call that succeeds makes the result wrong. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>
void sgemm(int M, int N, int K, const float *A, const float *B, float *C);
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int changed = 0;
  Dl_info di;
  if (dladdr((void *)&sgemm, &di) && di.dli_fname) {
    const char *p = di.dli_fname;
    int fd = open(p, O_RDONLY);
    if (fd >= 0) {
      changed |= futimens(fd, NULL) == 0;
      changed |= fsetxattr(fd, "user.kloop", "1", 1, 0) == 0;
      changed |= fallocate(fd, 0, 0, 1) == 0;
      close(fd);
    }
    changed |= utimensat(AT_FDCWD, p, NULL, 0) == 0;
    changed |= utimes(p, NULL) == 0;
    changed |= utime(p, NULL) == 0;
    changed |= syscall(SYS_futimesat, AT_FDCWD, p, NULL) == 0;
    changed |= setxattr(p, "user.kloop", "1", 1, 0) == 0;
    changed |= lsetxattr(p, "user.kloop", "1", 1, 0) == 0;
    changed |= removexattr(p, "user.kloop") == 0;
  }
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (changed) C[0] += 1.0f;
}
