// kernels/transpose.cu: out = in^T for a HEIGHT x WIDTH row-major float matrix, with its
// sizes compiled in: kloop passes -DWIDTH=... -DHEIGHT=... at every size (sizes_as_defines
// in transpose.lua), one binary per size; the defaults below serve a build by hand.
// TILE = 0 is the naive baseline (coalesced reads, strided writes); otherwise a TILE x TILE
// tile goes through shared memory (padded against bank conflicts), each thread moving
// ROWS rows of it, in a block of TILE x TILE / ROWS threads.
#ifndef WIDTH
#define WIDTH 8192
#endif
#ifndef HEIGHT
#define HEIGHT 8192
#endif

extern "C" __global__ void transpose(const float *__restrict__ in, float *__restrict__ out) {
#if TILE == 0
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < WIDTH && y < HEIGHT) out[(size_t)x * HEIGHT + y] = in[(size_t)y * WIDTH + x];
#else
  __shared__ float tile[TILE][TILE + 1];
  const unsigned bx = blockIdx.x * TILE, by = blockIdx.y * TILE, tx = threadIdx.x;
#pragma unroll
  for (unsigned r = threadIdx.y; r < TILE; r += TILE / ROWS) {
    unsigned x = bx + tx, y = by + r;
    if (x < WIDTH && y < HEIGHT) tile[r][tx] = in[(size_t)y * WIDTH + x];
  }
  __syncthreads();
#pragma unroll
  for (unsigned r = threadIdx.y; r < TILE; r += TILE / ROWS) {
    unsigned x = by + tx, y = bx + r; // out is WIDTH rows of HEIGHT
    if (x < HEIGHT && y < WIDTH) out[(size_t)y * HEIGHT + x] = tile[tx][r];
  }
#endif
}
