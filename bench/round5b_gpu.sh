#!/usr/bin/env bash
# bench/round5b_gpu.sh (round 2, session 9): every GPU test with the session's changes
# (modules without globals not reloaded before each timed repetition; the library's
# timing child opening CUDA beside the worker's start), then side by side, alternated,
# empty compile caches: build/old/kloop (10a0a4f, its embedded Lua) against build/kloop
# on gemm_tiled model 100 (seeds 7, 3; GPU busy) and on the microsecond exhaustive
# tunes (saxpy, stencil); then Kernel Tuner on saxpy and stencil. Logs in $OUT, a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
for seed in 7 3; do
  for b in old new; do
    use_bin $b
    fresh_cache
    export KLOOP_WAITS_LOG=$O/waits_model${seed}_$b.log
    busy_rows "model$seed $b" 100 --seed $seed
    unset KLOOP_WAITS_LOG
  done
done
micro_side_by_side
use_bin new
unset KLOOP_CACHE
OUT=$O/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $O/kt.txt 2>&1
echo "== GPU tests"; cat $T/gpu_tests.txt
echo "== KT"; cut -c1-260 $O/kt/table.txt
echo "== side by side"; for r in "${rows[@]}"; do echo "$r"; done
