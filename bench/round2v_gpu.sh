#!/usr/bin/env bash
# bench/round2v_gpu.sh: where a run's fixed cost goes with an empty compile cache (the
# probe, the evaluator's start step by step) for saxpy, stencil and gemm_tiled, then
# exhaustive tunes of saxpy and stencil and 100-candidate random and model tunes of
# gemm_tiled, each with an empty cache, GPU busy and their time lines; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-26s %s' "$1" "$2")"); }
fresh() { rm -rf /tmp/r2v_cache; mkdir -p /tmp/r2v_cache; export KLOOP_CACHE=/tmp/r2v_cache; }
fresh
build/kloop bench/start_costs.lua kernels/saxpy.lua kernels/stencil.lua kernels/gemm_tiled.lua > "$O/start_cold.log" 2>&1
build/kloop bench/start_costs.lua kernels/saxpy.lua kernels/stencil.lua kernels/gemm_tiled.lua > "$O/start_warm.log" 2>&1
while read -r l; do row "cold" "$(echo "$l" | cut -c1-200)"; done < "$O/start_cold.log"
while read -r l; do row "warm" "$(echo "$l" | cut -c1-200)"; done < "$O/start_warm.log"
for t in saxpy:6 stencil:22; do
  n=${t#*:}; t=${t%:*}
  fresh
  s=$(date +%s.%N)
  build/kloop tune kernels/$t.lua --method exhaustive --budget $n --no-store --profile none --promote off --seed 1 > "$O/tune_$t.log" 2>&1
  e=$(date +%s.%N)
  row "tune $t exh" "process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s; $(grep -E '^run ' "$O/tune_$t.log" | cut -c1-90)"
  row "  time" "$(grep -E '^time:' "$O/tune_$t.log" | cut -c11-190)"
done
for r in "100 random 9" "100 model 7"; do
  set -- $r
  fresh
  OUT=$O bash bench/gpu_busy.sh kernels/gemm_tiled.lua "$1" --seed "$3" --timing-budget 0.3 --promote off --method "$2" > "$O/busy_$2.log" 2>&1
  row "gemm_tiled $2 $1" "$(grep -E '^(GPU_BUSY|WALL)' "$O/busy_$2.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$O"/gpu_busy.*/tune.log | cut -c11-200)"
  mv "$O"/gpu_busy.*/tune.log "$O/tune_gemm_$2.log"; rm -rf "$O"/gpu_busy.*
done
for r in "${rows[@]}"; do echo "$r"; done
