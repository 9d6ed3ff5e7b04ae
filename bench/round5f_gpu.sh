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
    rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
    export KLOOP_WAITS_LOG=$T/waits.log; rm -f $KLOOP_WAITS_LOG
    if [ $b = var ]; then export KLOOP_LUA_DIR=$PWD/$VARIANT; else unset KLOOP_LUA_DIR; fi
    KLOOP=build/kloop OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1
    unset KLOOP_LUA_DIR
    {
      echo "== model$seed $b: $(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
      grep -h -E '^(time|waits|best):' "$T"/gpu_busy.*/tune.log | cut -c1-300
      awk '$2 == "start" && !t0 {t0 = $1} $2 == "wait" {printf "  at %.2f s: %s\n", $1 - t0, substr($0, index($0, "wait") + 5)}' $KLOOP_WAITS_LOG
    } >> $L
    rm -rf "$T"/gpu_busy.*
  done
done
cat $L
