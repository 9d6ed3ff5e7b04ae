#!/usr/bin/env bash
# bench/round5e_gpu.sh (round 2, session 9): where a model search of a task seen for the
# first time still waits for its compilers: gemm_tiled model 100 (seeds 3, 5, 7), empty
# compile caches, GPU busy, every wait from KLOOP_WAITS_LOG with its time since the
# worker's start and the evaluations prepared before it. One log, printed.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
L=$O/all.log
: > $L
for seed in ${SEEDS:-3 5 7}; do
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  export KLOOP_WAITS_LOG=$T/waits.log; rm -f $KLOOP_WAITS_LOG
  KLOOP=build/kloop OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off $EXTRA > "$T/busy.log" 2>&1
  {
    echo "== model$seed: $(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
    grep -h -E '^(time|waits|best):' "$T"/gpu_busy.*/tune.log | cut -c1-300
    awk '$2 == "start" && !t0 {t0 = $1} $2 == "wait" {printf "  at %.2f s: %s\n", $1 - t0, substr($0, index($0, "wait"))}' $KLOOP_WAITS_LOG
  } >> $L
  rm -rf "$T"/gpu_busy.*
done
cat $L
