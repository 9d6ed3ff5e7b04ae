#!/usr/bin/env bash
# bench/round5g_gpu.sh (round 2, session 9, the last call): every GPU test after the
# review's mends (the module reload before each timed repetition kept for every module),
# gemm_tiled model 100 (seeds 7, 3, 5) and random 100 (seed 9) on empty compile caches,
# then a second run on a warm cache (the library's time kept: its child stopped after the
# probe), then Kernel Tuner on saxpy and stencil. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
busy() { # label, then tune options
  local label=$1; shift
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 "$@" --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1
  row "$label" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  { echo "== $label: ${rows[-1]}"; grep -h -E '^(time|waits|best|library):' "$T"/gpu_busy.*/tune.log; } >> $L
  rm -rf "$T"/gpu_busy.*
}
for seed in 7 3 5; do
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  busy "model$seed" --seed $seed
done
rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
busy "random9" --method random --seed 9
busy "random10, warm cache" --method random --seed 10
unset KLOOP_CACHE
OUT=$T/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
echo "== GPU tests"; cat $T/gpu_tests.txt
echo "== KT"; cut -c1-270 $T/kt/table.txt
echo "== runs"; grep -E '^(== |library|time)' $L | grep -v '^== GPU' | grep -v '^== KT' | cut -c1-250 | tail -25
