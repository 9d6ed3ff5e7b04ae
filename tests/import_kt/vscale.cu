// vscale.cu: a float4 kernel as a Kernel Tuner user writes it (kloop import-kt's vector example).
extern "C" __global__ void vscale(float4 *y, const float4 *x, float a, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) {
    float4 v = x[i];
    y[i] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
  }
}
