#!/bin/sh
# tests/unit/test_mask.sh KLOOP SRC_DIR: the comparison kernel's kl_mask_word (CUDA source
# text in lua/kloop/eval/worker_client.lua) and src/kl_buf.c's must give the same words, or
# every reference on the device would unmask to garbage. The CUDA text is compiled here as
# host C and compared on a million (index, key) pairs.
. "$(dirname "$0")/cuda_text.sh"
cuda_text compare_source kl_mask_word kl_mask_word "$D/mask_cuda.inc"
cat > "$D/t.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#define __device__
#define __forceinline__ static inline
#define kl_mask_word cuda_mask_word
#include "mask_cuda.inc"
#undef kl_mask_word
uint32_t kl_mask_word(uint64_t i, uint64_t seed);
int main(void) {
  uint64_t x = 0x9E3779B97F4A7C15ull, bad = 0;
  for (int n = 0; n < 1000000; n++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t i = n < 500000 ? (uint64_t)n : x >> 20, seed = x * 0xD1B54A32D192ED03ull;
    if (cuda_mask_word(i, seed) != kl_mask_word(i, seed)) bad++;
  }
  if (bad) { printf("FAIL: %llu of 1000000 mask words differ between the kernel and kl_buf.c\n", (unsigned long long)bad); return 1; }
  printf("PASS: the kernel's mask words equal kl_buf.c's on 1000000 pairs\n");
  return 0;
}
C
cc -O2 -std=c11 -D_GNU_SOURCE -I"$SRC/src" -I"$D" "$D/t.c" "$SRC/src/kl_buf.c" "$SRC/src/kl_err.c" -lm -lpthread -o "$D/t"
"$D/t"
