#!/usr/bin/env bash
# bench/round8b_gpu.sh (round 2, session 12): where a model search's GPU is idle. gemm_tiled
# model 100 on five seeds, empty compile caches: nvidia-smi's samples (KEEP_SMI) and every
# wait, compile and think (KLOOP_WAITS_LOG) in one log, to be lined up afterwards
# (bench/idle_map.py); and gemm_tiled's evaluations traced (bench/eval_breakdown.lua).
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
fresh_cache
{ echo "== breakdown gemm_tiled"; timeout 120 $K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua 2>&1; } >> $L
for seed in 7 13 3 9 11; do
  export KEEP_SMI=$T/smi.csv
  ab_row "model$seed" new "" --method model --seed $seed
  { echo "== smi model$seed"; cat "$T/smi.csv"; echo "== raw waits model$seed"; cat "$T/waits.log"; } >> $L
  unset KEEP_SMI
done
printf '%s\n' "${rows[@]}" | cut -c1-300
