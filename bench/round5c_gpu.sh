#!/usr/bin/env bash
# bench/round5c_gpu.sh (round 2, session 9): gemm_tiled model 100, seeds 7 and 3, empty
# compile caches, alternated: build/old/kloop (10a0a4f), build/kloop, and build/kloop
# with the Lua of $VARIANT (a copy of lua/ with one change, KLOOP_LUA_DIR) if given;
# each run's time line, library line and the worker start's parts. One log file.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
L=$O/all.log
: > $L
for seed in ${SEEDS:-7 3}; do
  for b in old new ${VARIANT:+var}; do
    rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
    export KLOOP_WAITS_LOG=$T/waits.log; rm -f $KLOOP_WAITS_LOG
    case $b in
      old) KLOOP_EMBEDDED_ONLY=1 KLOOP=build/old/kloop OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1 ;;
      new) KLOOP=build/kloop OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1 ;;
      var) KLOOP_LUA_DIR=$PWD/$VARIANT KLOOP=build/kloop OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1 ;;
    esac
    {
      echo "== model$seed $b: $(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
      grep -h -E '^(time|waits|best|library):' "$T"/gpu_busy.*/tune.log
      grep -h ' start ' $KLOOP_WAITS_LOG 2>/dev/null | cut -d' ' -f2-
    } >> $L
    rm -rf "$T"/gpu_busy.*
  done
done
unset KLOOP_WAITS_LOG KLOOP_CACHE
cat $L
