#!/usr/bin/env bash
# bench/round5d_gpu.sh (round 2, session 9, after the changes): every GPU test; then side
# by side, alternated, empty compile caches, build/old/kloop (10a0a4f, its embedded Lua)
# against build/kloop: gemm_tiled model 100 (seeds 7, 3, 5) and random 100 (seed 9) with
# GPU busy, the microsecond exhaustive tunes (saxpy, stencil) twice each, and the traced
# worker's breakdown of 12 gemm_tiled points; then Kernel Tuner on all three spaces.
# Everything in $OUT/all.log (few files come back); a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
for spec in "model 7" "model 3" "model 5" "random 9"; do
  set -- $spec
  for b in old new; do
    use_bin $b
    fresh_cache
    busy_rows "$1$2 $b" 100 --method $1 --seed $2
  done
done
micro_side_by_side
for b in old new; do
  use_bin $b
  fresh_cache
  $K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua > $T/bd.log 2>&1
  { echo "== breakdown gemm_tiled $b"; cat $T/bd.log; } >> $L
  row "breakdown $b" "$(tail -1 $T/bd.log | cut -c1-150)"
done
use_bin new
unset KLOOP_CACHE
OUT=$T/kt bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
echo "== GPU tests"; cat $T/gpu_tests.txt
echo "== KT"; cut -c1-270 $T/kt/table.txt
echo "== side by side"; for r in "${rows[@]}"; do echo "$r"; done
