#!/usr/bin/env bash
# bench/round4c_gpu.sh: session 8's third call. Where an evaluation's time goes now
# (bench/eval_breakdown.lua: gemm_tiled at the benches' 0.3 s timing budget, saxpy and
# stencil at the default), and gemm_tiled's model search at budget 64, seed 7, empty
# compile cache, GPU busy, with the default timing budget (1 s) and with 0.3 s. A table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for spec in "gemm_tiled 12 0.3" "saxpy 8 1.0" "stencil 8 1.0"; do
  set -- $spec
  fresh_cache
  build/kloop bench/eval_breakdown.lua "$2" "$3" kernels/$1.lua > "$O/breakdown_$1.txt" 2>&1
  row "breakdown $1" "$(grep -E '^BREAKDOWN' "$O/breakdown_$1.txt" | cut -c12-230)"
done
# (the default timing budget is 1 s: given last, it wins over busy_rows' 0.3)
for tb in 1 0.3; do
  fresh_cache
  busy_rows "model7_64_tb$tb" 64 --seed 7 --timing-budget "$tb"
done
for r in "${rows[@]}"; do echo "$r"; done
