#!/usr/bin/env bash
# bench/round4e_gpu.sh: after the review's mends (think fires in a batch's first wait, so
# what it names can fill it; a cubin's kernel attributes in its code id), gemm_tiled
# model 100 (seeds 7, 3, 5), empty compile caches, GPU busy, choosing ahead from 16
# evaluations (the default) and from 8 (--ahead-after 8), alternated. A table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in 7 3 5; do
  for aa in 16 8; do
    fresh_cache
    busy_rows "model$seed aa$aa" 100 --seed $seed --ahead-after $aa
  done
done
for r in "${rows[@]}"; do echo "$r"; done
