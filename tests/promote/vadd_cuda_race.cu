// tests/promote/vadd_cuda_race.cu: a shared-memory race that verification cannot see.
// Each thread stores x[i] in its slot; the first warp also stores the second warp's
// values into the second warp's slots, with no __syncthreads() between those writes
// and the second warp's reads. Both writers store the same value, so every result is
// right and verification passes; racecheck reports the hazards between the warps. (The
// read goes through a volatile pointer, or the compiler forwards the thread's own store
// and no shared load is left to race.)
extern "C" __global__ void vadd(int N, const float *x, const float *y, float *z) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < N ? x[i] : 0.0f;
  if (t < 32) {
    int k = i + 32;
    s[t + 32] = k < N ? x[k] : 0.0f;
  }
  volatile float *vs = s;
  if (i < N) z[i] = vs[t] + y[i];
}
