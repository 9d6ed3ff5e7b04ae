// expect: rejected wrong
// static_data: 16777216
// expect_allowed: wrong
// Computes once, then replays the first result from device memory on later launches.
__device__ float saved[1 << 20];
__device__ int launches;
extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  bool first = launches < 64;  // every block of the first launch sees a small count
  if (row < M && col < N) {
    int i = row * N + col;
    if (!first && i < (1 << 20)) { C[i] = saved[i]; return; }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[i] = acc;
    if (i < (1 << 20)) saved[i] = acc;
  }
  if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0) atomicAdd(&launches, 1000);
}
