#!/usr/bin/env bash
# bench/round5h_gpu.sh (round 2, session 9): the baseline compiled from the prespawn on
# (a search's first evaluation waited 0.1-0.3 s for its compile after the worker's
# start): gemm_tiled model 100 (seed 7) and random 100 (seed 9) with their waits, then
# Kernel Tuner on saxpy and stencil. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for spec in "model 7" "random 9"; do
  set -- $spec
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  export KLOOP_WAITS_LOG=$T/waits.log; rm -f $KLOOP_WAITS_LOG
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --method $1 --seed $2 --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1
  row "$1$2" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  { echo "== $1$2: ${rows[-1]}"; grep -h -E '^(time|waits|best):' "$T"/gpu_busy.*/tune.log
    awk '$2 == "start" && !t0 {t0 = $1} $2 == "wait" {printf "  at %.2f s: %s\n", $1 - t0, substr($0, index($0, "wait") + 5)}' $KLOOP_WAITS_LOG; } >> $L
  rm -rf "$T"/gpu_busy.*
done
unset KLOOP_CACHE KLOOP_WAITS_LOG
OUT=$T/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
grep -h -E '^time:' $T/kt/kloop_*.log >> $L
grep -E '^(== model|== random|time:|waits:|best:|  at )' $L | cut -c1-260
cut -c1-270 $T/kt/table.txt
