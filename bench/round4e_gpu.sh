#!/usr/bin/env bash
# bench/round4e_gpu.sh: after the review's mends (think fires in a batch's first wait, so
# what it names can fill it; a cubin's kernel attributes in its code id), gemm_tiled
# model 100 (seeds 7, 3, 5), empty compile caches, GPU busy, choosing ahead from 16
# evaluations (the default) and from 8 (--ahead-after 8), alternated. A table last.
cd "$(dirname "$0")/.."
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-16s %s' "$1" "$2")"); }
for seed in 7 3 5; do
  for aa in 16 8; do
    rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
    OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off --ahead-after $aa > "$T/busy.log" 2>&1
    row "model$seed aa$aa" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
    row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-160)"
    row "  waits, best" "$(grep -h -E '^waits:' "$T"/gpu_busy.*/tune.log | cut -c11-130); $(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c11-90)"
    rm -rf "$T"/gpu_busy.*
  done
done
for r in "${rows[@]}"; do echo "$r"; done
