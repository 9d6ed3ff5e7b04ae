// kernels/saxpy.cu: out = a * x + y over N floats, one element per thread: a
// memory-bound kernel (12 bytes moved per 2 FLOPs), the roofline's other side.
extern "C" __global__ void saxpy(int N, float a, const float *x, const float *y, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) out[i] = a * x[i] + y[i];
}
