#!/usr/bin/env bash
# bench/round2t_gpu.sh: GPU busy of 100-candidate model searches of gemm_tiled, each with
# an empty compile cache, choosing ahead in batches of 8 and of 4; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
C0=$(mktemp -d); KLOOP_CACHE=$C0 build/kloop tune kernels/gemm_tiled.lua --budget 8 --no-store --method random --seed 99 >/dev/null 2>&1; rm -rf "$C0"
for ab in 8 4 8; do
  C=$(mktemp -d)
  rm -rf "$O"/gpu_busy.*
  KLOOP_CACHE=$C OUT=$O bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed 7 --timing-budget 0.3 --promote off --method model --ahead-batch $ab > "$O/ab$ab.log" 2>&1
  rm -rf "$C"
  echo "model 100 seed 7, --ahead-batch $ab, empty cache: $(grep -E '^(GPU_BUSY|WALL)' "$O/ab$ab.log" | cut -c1-60 | tr '\n' ' ')"
  echo "  $(grep -h -E '^(time|best):' "$O"/gpu_busy.*/tune.log | cut -c1-170 | tr '\n' ' ')"
done
