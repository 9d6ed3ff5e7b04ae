// expect: rejected
// expect_allowed: ok
// static_data: 16777216
// honest: 0.8
// The cache of a cheat that knows about the floor: each input set's output is kept in
// module globals, keyed by a fingerprint of four input elements; on a hit it copies the
// output and spins until it is just above the physical floor. With the default limit on
// static device data it is refused at load; where the task allows the globals, the
// module is loaded afresh before every timed launch, so the cache is always empty there
// and the time is the real work's (at least 0.8x the honest kernel's).
// kloop: launch entry = "probe", grid = {1}, block = {1}
// kloop: launch grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8}
__device__ float cache[2][1 << 20];
__device__ float keys[2][4];
__device__ int slot;
__device__ int next_slot;
extern "C" __global__ void probe(int M, int N, int K, const float *A, const float *B, float *C) {
  float f[4] = {A[0], A[(M * K) / 3], B[(K * N) / 5], B[K * N - 1]};
  for (int s = 0; s < 2; ++s)
    if (keys[s][0] == f[0] && keys[s][1] == f[1] && keys[s][2] == f[2] && keys[s][3] == f[3] && M * N <= (1 << 20)) {
      slot = s;
      return;
    }
  int s = next_slot;
  next_slot = 1 - s;
  for (int j = 0; j < 4; ++j) keys[s][j] = f[j];
  slot = -1 - s;
}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  int i = row * N + col;
  int s = slot;
  if (s >= 0) {
    C[i] = cache[s][i];
    long long t0 = clock64();
    while (clock64() - t0 < 100000) {}  // ~50 us: above the floor, far below the work
    return;
  }
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[i] = acc;
  if (M * N <= (1 << 20)) cache[-1 - s][i] = acc;
}
