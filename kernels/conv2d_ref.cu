// kernels/conv2d_ref.cu: the float64 reference of conv2d.cu, with the same __constant__
// filter (kloop fills both from the same host values).
#define FW 7

__constant__ float filter[FW * FW];

extern "C" __global__ void conv2d_ref(int W, int H, const float *in, double *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  int pitch = W + FW - 1;
  double acc = 0;
  for (int j = 0; j < FW; j++)
    for (int i = 0; i < FW; i++) acc += (double)filter[j * FW + i] * in[(size_t)(y + j) * pitch + x + i];
  out[(size_t)y * W + x] = acc;
}
