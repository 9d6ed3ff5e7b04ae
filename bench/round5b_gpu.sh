#!/usr/bin/env bash
# bench/round5b_gpu.sh (round 2, session 9): every GPU test with the session's changes
# (modules without globals not reloaded before each timed repetition; the library's
# timing child opening CUDA beside the worker's start), then side by side, alternated,
# empty compile caches: build/old/kloop (10a0a4f, its embedded Lua) against build/kloop
# on gemm_tiled model 100 (seeds 7, 3; GPU busy) and on the microsecond exhaustive
# tunes (saxpy, stencil); then Kernel Tuner on saxpy and stencil. Logs in $OUT, a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
OUT=$O bash bench/gpu_tests.sh > $O/gpu_tests.txt 2>&1
run_bin() { # bin label, then the command's words
  local b=$1; shift
  if [ "$b" = old ]; then KLOOP_EMBEDDED_ONLY=1 KLOOP=build/old/kloop "$@"; else KLOOP=build/kloop "$@"; fi
}
for seed in 7 3; do
  for b in old new; do
    rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
    export KLOOP_WAITS_LOG=$O/waits_model${seed}_$b.log
    OUT=$T run_bin $b bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed $seed --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1
    cp "$T"/gpu_busy.*/tune.log $O/tune_model${seed}_$b.log
    row "model$seed $b" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
    row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-170)"
    row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c11-60); $(grep -h -E '^library:' "$T"/gpu_busy.*/tune.log | cut -c1-50)"
    rm -rf "$T"/gpu_busy.*
    unset KLOOP_WAITS_LOG
  done
done
for t in saxpy:6 stencil:22; do
  for i in 1 2; do
    for b in old new; do
      rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
      k=${t%%:*}; n=${t##*:}
      export KLOOP_WAITS_LOG=$O/waits_${k}${i}_$b.log
      s=$(date +%s.%N)
      if [ $b = old ]; then KLOOP_EMBEDDED_ONLY=1 build/old/kloop tune kernels/$k.lua --method exhaustive --budget $n --no-store --profile none --promote off --seed 1 > $O/tune_${k}${i}_$b.log 2>&1
      else build/kloop tune kernels/$k.lua --method exhaustive --budget $n --no-store --profile none --promote off --seed 1 > $O/tune_${k}${i}_$b.log 2>&1; fi
      e=$(date +%s.%N)
      unset KLOOP_WAITS_LOG
      row "$k$i $b" "$(grep -E '^run ' $O/tune_${k}${i}_$b.log | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s"
      row "  time" "$(grep -h -E '^time:' $O/tune_${k}${i}_$b.log | cut -c11-170)"
    done
  done
done
unset KLOOP_CACHE
OUT=$O/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $O/kt.txt 2>&1
echo "== GPU tests"; cat $O/gpu_tests.txt
echo "== KT"; cut -c1-260 $O/kt/table.txt
echo "== side by side"; for r in "${rows[@]}"; do echo "$r"; done
