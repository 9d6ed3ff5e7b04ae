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
# (the old binary with its own embedded Lua, not the working tree's)
use() { if [ "$1" = old ]; then export KLOOP_EMBEDDED_ONLY=1; K=build/old/kloop; else unset KLOOP_EMBEDDED_ONLY; K=build/kloop; fi; }
for spec in "model 7" "model 3" "model 5" "random 9"; do
  set -- $spec
  for b in old new; do
    rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
    use $b
    KLOOP=$K OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --method $1 --seed $2 --timing-budget 0.3 --promote off > "$T/busy.log" 2>&1
    row "$1$2 $b" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
    { echo "== $1 $2 $b: ${rows[-1]}"; grep -h -E '^(time|waits|best|library):' "$T"/gpu_busy.*/tune.log; } >> $L
    rm -rf "$T"/gpu_busy.*
  done
done
for t in saxpy:6 stencil:22; do
  k=${t%%:*}; n=${t##*:}
  for i in 1 2; do
    for b in old new; do
      rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
      s=$(date +%s.%N)
      use $b
      $K tune kernels/$k.lua --method exhaustive --budget $n --no-store --profile none --promote off --seed 1 > $T/t.log 2>&1
      e=$(date +%s.%N)
      row "$k$i $b" "$(grep -E '^run ' $T/t.log | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s"
      { echo "== $k$i $b: ${rows[-1]}"; grep -h -E '^time:' $T/t.log; } >> $L
    done
  done
done
for b in old new; do
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  use $b
  $K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua > $T/bd.log 2>&1
  { echo "== breakdown gemm_tiled $b"; cat $T/bd.log; } >> $L
  row "breakdown $b" "$(tail -1 $T/bd.log | cut -c1-150)"
done
unset KLOOP_CACHE KLOOP_EMBEDDED_ONLY
OUT=$T/kt bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
echo "== GPU tests"; cat $T/gpu_tests.txt
echo "== KT"; cut -c1-270 $T/kt/table.txt
echo "== side by side"; for r in "${rows[@]}"; do echo "$r"; done
