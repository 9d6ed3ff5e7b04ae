// kernels/reduce.cu: a two-stage float sum. Stage 1: NB blocks of BS threads each sum a
// grid-strided share of x (float or float4 loads: VEC) into partial[blockIdx.x]; stage 2:
// one block sums the NB partial sums into out[0]. BS, NB and VEC are tunables, always
// passed as -D (no defaults here: the sidecar's first values are the default point).

#if VEC == 4
typedef float4 vec_t;
__device__ __forceinline__ float lanes(float4 v) { return (v.x + v.y) + (v.z + v.w); }
#else
typedef float vec_t;
__device__ __forceinline__ float lanes(float v) { return v; }
#endif

// The sum of v over the block (BS threads, a power of two), in thread 0.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float s[BS];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = BS / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  return s[0];
}

// n: the number of vec_t elements of x (N / VEC)
extern "C" __global__ void reduce_partial(const vec_t *x, float *partial, float *out, int n) {
  float acc = 0.f;
  for (int i = blockIdx.x * BS + threadIdx.x; i < n; i += NB * BS) acc += lanes(x[i]);
  float t = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = t;
}

extern "C" __global__ void reduce_final(const vec_t *x, float *partial, float *out, int n) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < NB; i += BS) acc += partial[i];
  float t = block_sum(acc);
  if (threadIdx.x == 0) out[0] = t;
}
