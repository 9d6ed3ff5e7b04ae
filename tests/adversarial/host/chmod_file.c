/* expect: crashed */
/* Changes the mode and owner of a file it can open read-only, through the descriptor
   (fchmod, fchown, fchmodat2 with AT_EMPTY_PATH: calls a deny-list by name misses).
   The file is its own shared object (found through dladdr, so nothing outside kloop's
   cache is touched even where the suite runs as root), and the changes keep the
   current values; any call that succeeds makes the result wrong. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
void sgemm(int M, int N, int K, const float *A, const float *B, float *C);
void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int changed = 0;
  Dl_info di;
  if (dladdr((void *)&sgemm, &di) && di.dli_fname) {
    int fd = open(di.dli_fname, O_RDONLY);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
      mode_t m = st.st_mode & 07777;
      changed |= fchmod(fd, m) == 0;
      changed |= fchown(fd, st.st_uid, st.st_gid) == 0;
      changed |= syscall(SYS_fchmodat2, fd, "", m, AT_EMPTY_PATH) == 0;
    }
    if (fd >= 0) close(fd);
  }
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (changed) C[0] += 1.0f;
}
