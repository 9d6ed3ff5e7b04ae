/* expect: ok */
/* Reads files outside the folders the worker needs: system configuration, the
   user's home, the project folder it was started in, and lists directories. It
   computes correctly only when every read failed, so a leak shows as `wrong`. */
#include <fcntl.h>
#include <sys/syscall.h>
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
  static const char *const files[] = {"/etc/passwd", "/etc/hostname", "/etc/hosts", "/root/.bashrc",
                                      "/root/.profile", "README.md", "CMakeLists.txt", "../README.md"};
  int leaked = 0;
  for (unsigned i = 0; i < sizeof files / sizeof files[0]; ++i) leaked |= readable(files[i]);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) C[(long)i * N + j] = 0.0f;
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) C[(long)i * N + j] += A[(long)i * K + k] * B[(long)k * N + j];
  }
  if (leaked) C[0] += 1.0f;
}
