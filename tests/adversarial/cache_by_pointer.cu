// expect: rejected wrong
// static_data: 16777216
// expect_allowed: wrong
// Keeps the result of the last call keyed by the input pointers and replays it.
__device__ const float *last_a;
__device__ const float *last_b;
__device__ float cache[1 << 21];
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  bool hit = last_a == A && last_b == B && M * N <= (1 << 21);
  if (row < M && col < N) {
    int i = row * N + col;
    if (hit) { C[i] = cache[i]; }
    else {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
      C[i] = acc;
      if (M * N <= (1 << 21)) cache[i] = acc;
    }
  }
  __syncthreads();
  if (row == 0 && col == 0) { last_a = A; last_b = B; }
}
