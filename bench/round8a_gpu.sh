#!/usr/bin/env bash
# bench/round8a_gpu.sh (round 2, session 12): where the rest of the time goes now. The
# microsecond tasks' exhaustive tunes twice each with their time lines and every wait and
# compile (KLOOP_WAITS_LOG), stencil's evaluation traced (bench/eval_breakdown.lua);
# gemm_tiled model 100 (seeds 7, 13) and random 100 (seed 9) with their waits, compiles
# and thinks, and the host's CPU busy over each run (/proc/stat: are the compilers the
# bound?). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
cpu_now() { awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8; t = b + $5 + $6; print b, t}' /proc/stat; }
echo "== nproc $(nproc)" >> $L
fresh_cache
{ echo "== breakdown stencil"; timeout 120 $K bench/eval_breakdown.lua 22 0.3 kernels/stencil.lua 2>&1; } >> $L
for t in saxpy:6 stencil:22 saxpy:6 stencil:22; do
  waits_begin
  micro_row "${t%%:*}" "${t%%:*}" "${t##*:}"
  { echo "== raw waits ${t%%:*}"; cat "$KLOOP_WAITS_LOG"; grep -E '^(time|stages|verdicts):' "$T/t.log"; } >> $L
  unset KLOOP_WAITS_LOG
done
for spec in "model 7" "model 13" "random 9"; do
  set -- $spec
  read b0 t0 < <(cpu_now)
  ab_row "$1$2" new "" --method $1 --seed $2
  read b1 t1 < <(cpu_now)
  cs=$(awk '$2 == "compiled" {s += $3} END {printf "%.1f", s}' "$T/waits.log" 2>/dev/null)
  row "  compile seconds" "$cs"
  row "  cpu" "$(awk -v b0=$b0 -v t0=$t0 -v b1=$b1 -v t1=$t1 -v n=$(nproc) 'BEGIN {printf "%.1f%% of %d cores busy", 100*(b1-b0)/(t1-t0), n}')"
  { echo "== raw waits $1$2 (cpu ${rows[-1]})"; cat "$T/waits.log"; } >> $L
done
printf '%s\n' "${rows[@]}" | cut -c1-300
