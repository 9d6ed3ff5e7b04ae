// vadd.cu: an import-kt example: Kernel Tuner style (C++ linkage would need name
// expressions; this one is extern "C"), block size from a tunable, a plain float* input.
extern "C" __global__ void vadd(float *c, float *a, const float *b, int n) {
  int i = blockIdx.x * block_size_x * tile + threadIdx.x;
  for (int k = 0; k < tile; k++, i += block_size_x) {
    if (i < n) c[i] = a[i] + b[i];
  }
}
