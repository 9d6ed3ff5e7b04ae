#!/usr/bin/env bash
# bench/round15f_gpu.sh (round 2, session 20): the session's end on another machine:
# gemm_tiled model 100 at seeds 21 9 5 11 19 23 (SEEDS), then Kernel Tuner and kloop on
# all three spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in ${SEEDS:-21 9 5 11 19 23}; do
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
kt_logged
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
grep -E "^(task|gemm_tiled|saxpy|stencil) " "$T/kt.txt" | cut -c1-200
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-220
