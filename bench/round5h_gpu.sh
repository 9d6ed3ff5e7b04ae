#!/usr/bin/env bash
# bench/round5h_gpu.sh (round 2, session 9): the baseline compiled from the prespawn on
# (a search's first evaluation waited 0.1-0.3 s for its compile after the worker's
# start): gemm_tiled model 100 (seed 7) and random 100 (seed 9) with their waits, then
# Kernel Tuner on saxpy and stencil. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for spec in "model 7" "random 9"; do
  set -- $spec
  fresh_cache
  waits_begin
  busy_rows "$1$2" 100 --method $1 --seed $2
  waits_logged
done
unset KLOOP_CACHE
OUT=$T/kt TASKS=saxpy,stencil bash bench/kt_gpu/run.sh > $T/kt.txt 2>&1
{ echo "== KT"; cat $T/kt.txt; } >> $L
grep -h -E '^time:' $T/kt/kloop_*.log >> $L
grep -E '^(== model|== random|time:|waits:|best:|  at )' $L | cut -c1-260
cut -c1-270 $T/kt/table.txt
