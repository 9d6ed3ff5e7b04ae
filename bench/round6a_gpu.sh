#!/usr/bin/env bash
# bench/round6a_gpu.sh (round 2, session 10): where the rest goes. The evaluations of
# the microsecond tasks traced (bench/eval_breakdown.lua: stencil 22, saxpy 6); their
# exhaustive tunes with the start's parts; gemm_tiled model 100 (seed 7) and random 100
# (seed 9) with every wait, every background compile's end (how long it queued, ran) and
# every think (KLOOP_WAITS_LOG). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
for t in stencil:22 saxpy:6; do
  fresh_cache
  { echo "== breakdown ${t%%:*}"; timeout 120 $K bench/eval_breakdown.lua "${t##*:}" 0.3 "kernels/${t%%:*}.lua" 2>&1; } >> $L
done
for t in saxpy:6 stencil:22; do
  waits_begin
  micro_row "${t%%:*}" "${t%%:*}" "${t##*:}"
  cat "$KLOOP_WAITS_LOG" >> $L
  unset KLOOP_WAITS_LOG
done
for spec in "model 7" "random 9"; do
  set -- $spec
  fresh_cache
  waits_begin
  busy_rows "$1$2" 100 --method $1 --seed $2
  { echo "== raw waits $1$2"; cat "$KLOOP_WAITS_LOG"; } >> $L
  waits_logged
done
grep -A40 '^== breakdown' $L | cut -c1-200 | head -90
printf '%s\n' "${rows[@]}" | cut -c1-300
