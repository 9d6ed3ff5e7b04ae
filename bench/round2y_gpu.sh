#!/usr/bin/env bash
# bench/round2y_gpu.sh: after the review's mends (failed compiles kept for their
# evaluation, the probe's arch for device 0 alone, the pool reading the compilers):
# every GPU test, kloop check of four tasks, and tunes of saxpy, stencil and gemm_tiled
# (empty cache) with their time lines, the last through `--gpus 0` (the pool's path);
# a table last, logs in /tmp/r2y.
cd "$(dirname "$0")/.."
L=/tmp/r2y; mkdir -p $L
OUT=$L bash bench/gpu_tests.sh > $L/tests.txt 2>&1
for t in saxpy stencil gemm_tiled conv2d; do
  timeout -s INT -k 10 120 build/kloop check kernels/$t.lua > "$L/check_$t.log" 2>&1
  printf '%-30s %s\n' "check $t" "exit $? $(grep -h -E '^(verdict|time) ' "$L/check_$t.log" | tr -s ' ' | cut -c1-60 | tr '\n' ' ')" >> $L/tests.txt
done
C=$(mktemp -d); export KLOOP_CACHE=$C
for r in "saxpy exhaustive 6" "stencil exhaustive 22" "gemm_tiled model 45" ; do
  set -- $r
  s=$(date +%s.%N)
  build/kloop tune kernels/$1.lua --method $2 --budget $3 --no-store --profile none --promote off --seed 1 > $L/tune_$1.log 2>&1
  rc=$?; e=$(date +%s.%N)
  printf '%-30s %s\n' "tune $1 $2 $3" "exit $rc process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s; $(grep -E '^run ' $L/tune_$1.log | cut -c1-100)" >> $L/tests.txt
  printf '%-30s %s\n' "  time" "$(grep -E '^time:' $L/tune_$1.log | cut -c11-190)" >> $L/tests.txt
done
rm -rf "$C"; C=$(mktemp -d); export KLOOP_CACHE=$C
build/kloop tune kernels/gemm_tiled.lua --method random --budget 24 --gpus 0 --no-store --profile none --promote off --seed 2 > $L/tune_pool.log 2>&1
printf '%-30s %s\n' "tune gemm_tiled --gpus 0" "exit $? $(grep -E '^run ' $L/tune_pool.log | cut -c1-100)" >> $L/tests.txt
printf '%-30s %s\n' "  time" "$(grep -E '^time:' $L/tune_pool.log | cut -c11-190)" >> $L/tests.txt
rm -rf "$C"
cp $L/tests.txt "${OUT:-/tmp}/r2y_table.txt"
cat $L/tests.txt
