// kernels/axpy_tmpl_ref.cu: the float64 reference of axpy_tmpl.cu.
extern "C" __global__ void axpy_ref(int n, float a, const float *x, const float *y0, double *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (double)a * x[i] + y0[i];
}
