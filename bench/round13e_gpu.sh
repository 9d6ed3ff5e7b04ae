#!/usr/bin/env bash
# bench/round13e_gpu.sh (round 2, session 18): the timing extended at a batch's last
# candidate too (new), against the extension within a batch only (var/prev) and with no
# extension (--extend-timing=false), alternated on one machine, empty compile caches:
# gemm_tiled model 100 at seeds 7, 13, 3 and 17 (SEEDS). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in ${SEEDS:-7 13 3 17}; do
  ab_row "model${seed} off" new "" --method model --seed "$seed" --extend-timing=false
  VARIANT=var/prev ab_row "model${seed} prev" var "" --method model --seed "$seed"
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | grep -E "^model|^  time" | cut -c1-200
