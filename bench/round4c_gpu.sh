#!/usr/bin/env bash
# bench/round4c_gpu.sh: session 8's third call. Where an evaluation's time goes now
# (bench/eval_breakdown.lua: gemm_tiled at the benches' 0.3 s timing budget, saxpy and
# stencil at the default), and gemm_tiled's model search at budget 64, seed 7, empty
# compile cache, GPU busy, with the default timing budget (1 s) and with 0.3 s. A table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-18s %s' "$1" "$2")"); }
fresh() { rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache; }
for spec in "gemm_tiled 12 0.3" "saxpy 8 1.0" "stencil 8 1.0"; do
  set -- $spec
  fresh
  build/kloop bench/eval_breakdown.lua "$2" "$3" kernels/$1.lua > "$O/breakdown_$1.txt" 2>&1
  row "breakdown $1" "$(grep -E '^BREAKDOWN' "$O/breakdown_$1.txt" | cut -c12-230)"
done
for tb in default 0.3; do
  fresh
  extra=()
  [ "$tb" = default ] || extra=(--timing-budget "$tb")
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 64 --seed 7 --promote off "${extra[@]}" > "$T/busy.log" 2>&1
  row "model7 64 tb $tb" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-220)"
  row "  waits, best" "$(grep -h -E '^waits:' "$T"/gpu_busy.*/tune.log | cut -c11-70); $(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c11-80)"
  cp "$T"/gpu_busy.*/tune.log "$O/tune_tb_$tb.log"
  rm -rf "$T"/gpu_busy.*
done
for r in "${rows[@]}"; do echo "$r"; done
