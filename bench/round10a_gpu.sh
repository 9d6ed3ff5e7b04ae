#!/usr/bin/env bash
# bench/round10a_gpu.sh (round 2, session 15): where the microsecond tunes and the
# library reference spend their time, before changing them: the GPU's compute mode,
# bench/eval_breakdown.lua on stencil and saxpy (traced worker: its start's steps and
# each backend call), the microsecond tunes' request gaps (twice each), gemm_tiled model
# 100 (its waits log kept, the library child's steps after its go), Kernel Tuner on the
# microsecond spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
row "compute mode" "$(nvidia-smi --query-gpu=compute_mode,persistence_mode,driver_version --format=csv,noheader)"
for t in stencil:21 saxpy:12; do
  fresh_cache
  build/kloop bench/eval_breakdown.lua "${t##*:}" 1.0 "kernels/${t%%:*}.lua" > "$T/bd.txt" 2>&1
  { echo "== breakdown ${t%%:*}"; cat "$T/bd.txt"; } >> "$L"
  row "bd ${t%%:*}" "$(grep -E '^(start|BREAKDOWN)' "$T/bd.txt" | tr '\n' ' ' | cut -c1-280)"
done
for t in saxpy:6 stencil:22; do
  for i in 1 2; do
    micro_waits "${t%%:*}$i" "${t%%:*}" "${t##*:}"
    gaps_row "$KLOOP_WAITS_LOG" "${t%%:*}$i"
    unset KLOOP_WAITS_LOG
  done
done
for seed in 7 13; do
  ab_row "model$seed" new "" --method model --seed "$seed"
  cp "$T/waits.log" "$O/waits_model$seed.log" 2>/dev/null
  grep -h '^[0-9.]* library' "$O/waits_model$seed.log" | head -1 | while read -r l; do row "  library" "$l"; done
done
TASKS=saxpy,stencil OUT=$T/kt timeout 200 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
tail -8 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
