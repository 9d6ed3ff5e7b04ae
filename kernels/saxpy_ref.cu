// kernels/saxpy_ref.cu: the reference for saxpy, computed and stored in double precision.
extern "C" __global__ void saxpy_ref(int N, float a, const float *x, const float *y, double *out) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)N) out[i] = (double)a * (double)x[i] + (double)y[i];
}
