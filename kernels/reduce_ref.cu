// kernels/reduce_ref.cu: the float64 reference of reduce.cu: the same two stages in
// double (256 threads a block, gridDim.x partial sums), x read as floats.
#define RB 256

__device__ double block_sum_ref(double v) {
  __shared__ double s[RB];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = RB / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  return s[0];
}

// n: the float count (the reference runs at VEC = 1); partial: gridDim.x doubles
extern "C" __global__ void reduce_ref(const float *x, double *partial, double *out, int n) {
  double acc = 0;
  for (long i = (long)blockIdx.x * RB + threadIdx.x; i < n; i += (long)gridDim.x * RB) acc += x[i];
  double t = block_sum_ref(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = t;
}

// one block over the NB partial sums (kloop compiles the reference at the default
// point: -DNB=256, the grid of its first stage)
extern "C" __global__ void reduce_ref_final(const float *x, double *partial, double *out, int n) {
  double acc = 0;
  for (int i = threadIdx.x; i < NB; i += RB) acc += partial[i];
  double t = block_sum_ref(acc);
  if (threadIdx.x == 0) out[0] = t;
}
