#!/usr/bin/env bash
# bench/round9c_gpu.sh (round 2, session 14): a background compile's binary judged from the
# compiler's bytes (its image id and static data taken as it ends, not read back in the
# gap between two requests) against the commit before (d9681a9, built by hand as
# build/old/kloop), alternated on one machine, empty compile caches: gemm_tiled model 100
# (seeds 7, 13, 21) and stencil 22 (twice), every run's requests split by
# bench/request_gaps.py (the largest gaps line by line); the new runs' waits logs kept.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gaps_row() {
  { echo "== gaps $2"; python3 bench/request_gaps.py "$1"; } >> "$L" 2>&1
  row "  gaps" "$(python3 bench/request_gaps.py "$1" | grep -E '^(GAPS|  plain gaps)' | sed 's/^GAPS: //; s/^  plain gaps split: /split: /' | tr '\n' ' ' | cut -c1-290)"
  case $2 in model*new) cat "$1" >> "$O/waits_new.log" ;; esac
}
for seed in 7 13 21; do
  for b in old new; do
    ab_row "model$seed $b" "$b" "" --method model --seed "$seed"
    gaps_row "$T/waits.log" "model$seed $b"
  done
done
for i in 1 2; do
  for b in old new; do
    use_bin $b
    waits_begin
    micro_row "stencil$i $b" stencil 22
    gaps_row "$KLOOP_WAITS_LOG" "stencil$i $b"
    unset KLOOP_WAITS_LOG
  done
done
rm -f "$O"/tune_*old.log
printf '%s\n' "${rows[@]}" | cut -c1-300
