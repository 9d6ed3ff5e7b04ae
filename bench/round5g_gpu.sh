#!/usr/bin/env bash
# bench/round5g_gpu.sh (round 2, session 9, the last call): every GPU test after the
# review's mends (the module reload before each timed repetition kept for every module),
# gemm_tiled model 100 (seeds 7, 3, 5) and random 100 (seed 9) on empty compile caches,
# then a second run on a warm cache (the library's time kept: its child stopped after the
# probe), then Kernel Tuner on saxpy and stencil. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
for seed in 7 3 5; do
  fresh_cache
  busy_rows "model$seed" 100 --seed $seed
done
fresh_cache
busy_rows "random9" 100 --method random --seed 9
busy_rows "random10, warm cache" 100 --method random --seed 10
unset KLOOP_CACHE
OUT=$T/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
echo "== GPU tests"; cat $T/gpu_tests.txt
echo "== KT"; cut -c1-270 $T/kt/table.txt
echo "== runs"; grep -E '^(== |library|time)' $L | grep -v '^== GPU' | grep -v '^== KT' | cut -c1-250 | tail -25
