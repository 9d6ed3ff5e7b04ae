// tests/promote/vadd_cuda_race.cu: each thread stores x[i] in shared memory and reads its
// neighbour's slot with no __syncthreads() between: the neighbour is in the same warp,
// which in practice stores before it loads, so verification passes; racecheck reports
// the read-after-write hazard.
extern "C" __global__ void vadd(int N, const float *x, const float *y, float *z) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < N ? x[i] : 0.0f;
  int j = i ^ 1;
  if (j < N) z[j] = s[t ^ 1] + y[j];
}
