// kernels/axpy_tmpl.cu: y = a * x + y0 as a C++ template (no extern "C"): ITEMS
// elements per thread and the block size are template arguments, the instance the
// task's entry names from the tunables (entry = "axpy_t<ITEMS, BS>").
template <int kItems, int kBlock>
__global__ void axpy_t(int n, float a, const float *x, const float *y0, float *y) {
  int base = blockIdx.x * kBlock * kItems + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kItems; k++) {
    int i = base + k * kBlock;
    if (i < n) y[i] = a * x[i] + y0[i];
  }
}

