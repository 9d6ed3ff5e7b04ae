#!/usr/bin/env bash
# bench/round2g_gpu.sh: the mends of round 2 session 3 on the GPU (the device comparison's
# merge in C, the Philox mask, the cleared buffers: compare_device and the adversarial
# suite), half-precision buffers (kernels/haxpy: check and tune), where a tune run's time
# goes (the summary's time line) with GPU busy, and the saxpy breakdown. Table last.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
$K tests/gpu/compare_device.lua > "$O/cd.log" 2>&1; row "compare_device" "exit $?: $(tail -1 "$O/cd.log" | cut -c1-120)"
$K tests/gpu/adversarial.lua > "$O/adv.log" 2>&1; row "adversarial" "exit $?: $(tail -1 "$O/adv.log" | cut -c1-120)"
c=$($K check kernels/haxpy.lua 2>&1 | tee "$O/haxpy_check.log" | grep -E '^(verdict|reason|time) ' | tr -s ' ' | tr '\n' ' ')
row "haxpy check" "$c"
$K tune kernels/haxpy.lua --budget 16 --timing-budget 0.3 --no-store --seed 1 > "$O/haxpy_tune.log" 2>&1
row "haxpy tune" "exit $?: $(grep -E '^best' "$O/haxpy_tune.log" | cut -c1-110)"
row "haxpy tune" "$(grep -E '^run ' "$O/haxpy_tune.log" | cut -c1-110)"
for t in "gemm_tiled 24 0.3" "saxpy 5 0.3" "stencil 21 0.3"; do
  set -- $t
  OUT=$O bash bench/gpu_busy.sh kernels/$1.lua $2 --seed 1 --timing-budget $3 --promote off > "$O/busy_$1.log" 2>&1
  row "busy $1" "$(grep -E '^(GPU_BUSY|WALL)' "$O/busy_$1.log" | cut -c1-60 | tr '\n' ' ')"
  cp "$O"/gpu_busy.*/tune.log "$O/tune_$1.log" 2>/dev/null
  row "time $1" "$(grep -E "^time:" "$O/tune_$1.log" | cut -c1-160)"
  rm -rf "$O"/gpu_busy.*
done
$K bench/eval_breakdown.lua 8 0.3 kernels/saxpy.lua > "$O/bd_saxpy.log" 2>&1
row "breakdown saxpy" "$(tail -1 "$O/bd_saxpy.log" | cut -c1-150)"
echo; for r in "${rows[@]}"; do echo "$r"; done
