// expect: rejected too_fast
// static_data: 16777216
// expect_allowed: ok
// honest: 0.8
// Computes for real once per distinct input, keyed by a few sampled elements, and replays
// the cached product afterwards: always correct, and faster than the hardware can multiply.
// kloop: launch entry = "probe", grid = {1}, block = {1}
// kloop: launch grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8}
__device__ float cache[2][1 << 20];
__device__ float keys[2][2];
__device__ int slot;  // which cache slot serves this call, -1..-2 = compute into slot
__device__ int next_slot;
extern "C" __global__ void probe(int M, int N, int K, const float *A, const float *B, float *C) {
  float a = A[(M * K) / 3], b = B[(K * N) / 5];
  for (int s = 0; s < 2; ++s)
    if (keys[s][0] == a && keys[s][1] == b && M * N <= (1 << 20)) { slot = s; return; }
  int s = next_slot;
  next_slot = 1 - s;
  keys[s][0] = a; keys[s][1] = b;
  slot = -1 - s;
}
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  int i = row * N + col;
  int s = slot;
  if (s >= 0) { C[i] = cache[s][i]; return; }
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[i] = acc;
  if (M * N <= (1 << 20)) cache[-1 - s][i] = acc;
}
