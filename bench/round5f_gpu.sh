#!/usr/bin/env bash
# bench/round5f_gpu.sh (round 2, session 9): filling compile waits with the points of
# earlier guesses (compiled long ago) against the commit before (its Lua in $VARIANT),
# gemm_tiled model 100, seeds 3, 5, 7, empty compile caches, alternated, every wait
# logged (KLOOP_WAITS_LOG) with its time since the worker's start. One log, printed.
cd "$(dirname "$0")/.."
: "${VARIANT:?set VARIANT to a copy of lua/ with the change left out (e.g. var/head/lua)}"
. bench/round_lib.sh
for seed in ${SEEDS:-3 5 7}; do
  for b in var new; do
    use_bin $b
    fresh_cache
    waits_begin
    busy_rows "model$seed $b" 100 --seed $seed
    waits_logged
  done
done
use_bin new
cat $L
