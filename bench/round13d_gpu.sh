#!/usr/bin/env bash
# bench/round13d_gpu.sh (round 2, session 18): the timing extended through the waits the
# compilers foresee, against --extend-timing=false, alternated on one machine, empty
# compile caches: gemm_tiled model 100 at seeds 7, 13, 3 and 17 (rate, GPU busy,
# compile waits, best) and stencil 22 exhaustive twice. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
for seed in 7 13 3 17; do
  ab_row "model${seed} off" new "" --method model --seed "$seed" --extend-timing=false
  ab_row "model${seed} on" new "" --method model --seed "$seed"
done
for i in 1 2; do
  fresh_cache
  $K tune kernels/stencil.lua --method exhaustive --budget 22 --no-store --profile none --promote off --seed 1 --extend-timing=false > "$T/t.log" 2>&1
  row "stencil$i off" "$(grep -E '^run ' "$T/t.log" | sed 's/.*on //' | cut -c1-60)"
  micro_row "stencil$i on" stencil 22
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
