// scale_cpp.cu: an import-kt example with C++ linkage (no extern "C"): kloop finds the
// kernel through NVRTC's name expressions.
__global__ void scale_cpp(float *y, const float *x, float alpha, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
