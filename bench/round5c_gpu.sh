#!/usr/bin/env bash
# bench/round5c_gpu.sh (round 2, session 9): gemm_tiled model 100, seeds 7 and 3, empty
# compile caches, alternated: build/old/kloop (10a0a4f), build/kloop, and build/kloop
# with the Lua of $VARIANT (a copy of lua/ with one change, KLOOP_LUA_DIR) if given;
# each run's time line, library line and the worker start's parts. One log file.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in ${SEEDS:-7 3}; do
  for b in old new ${VARIANT:+var}; do
    use_bin $b
    fresh_cache
    waits_begin
    busy_rows "model$seed $b" 100 --seed $seed
    grep -h ' start ' "$KLOOP_WAITS_LOG" 2>/dev/null | cut -d' ' -f2- >> "$L"
    unset KLOOP_WAITS_LOG
  done
done
use_bin new
unset KLOOP_CACHE
cat $L
