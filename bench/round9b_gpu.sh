#!/usr/bin/env bash
# bench/round9b_gpu.sh (round 2, session 14): the compile memo (d9681a9) against the commit
# before it (c3afd4b, built by hand as build/old/kloop: git worktree add /tmp/oldsrc
# c3afd4b, cmake there, copy build/kloop), alternated on one machine with empty compile
# caches: gemm_tiled model 100 (seeds 7 and 13) and the microsecond tunes (saxpy 6,
# stencil 22, twice each), every run's requests split by bench/request_gaps.py; then
# every GPU test and Kernel Tuner's side-by-side (bench/kt_gpu/run.sh, build/ktwheels
# carried) with the new build. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gaps_row() {
  { echo "== gaps $2"; python3 bench/request_gaps.py "$1"; } >> "$L" 2>&1
  row "  gaps" "$(python3 bench/request_gaps.py "$1" | grep -E '^(GAPS|  plain)' | sed 's/^GAPS: //; s/^  plain gaps split: /split: /' | tr '\n' ' ' | cut -c1-290)"
}
for seed in 7 13; do
  for b in old new; do
    ab_row "model$seed $b" "$b" "" --method model --seed "$seed"
    gaps_row "$T/waits.log" "model$seed $b"
  done
done
for t in saxpy:6 stencil:22; do
  for i in 1 2; do
    for b in old new; do
      use_bin $b
      waits_begin
      micro_row "${t%%:*}$i $b" "${t%%:*}" "${t##*:}"
      gaps_row "$KLOOP_WAITS_LOG" "${t%%:*}$i $b"
      unset KLOOP_WAITS_LOG
    done
  done
done
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
OUT=$T/kt timeout 280 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
tail -8 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
