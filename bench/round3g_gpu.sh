#!/usr/bin/env bash
# bench/round3g_gpu.sh: the spread of model searches after the review's mends: gemm_tiled
# model 100 at seeds 7, 3 and 11, each with an empty compile cache, GPU busy and time
# lines; a table last.
cd "$(dirname "$0")/.."
T=$(mktemp -d)
for s in 7 3 11; do
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $s --timing-budget 0.3 --promote off --method model > "$T/busy.log" 2>&1
  printf '%-14s %s\n' "model $s" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  printf '%-14s %s\n' "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-230)"
  printf '%-14s %s\n' "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-90)"
  rm -rf "$T"/gpu_busy.*
done
