#!/usr/bin/env bash
# bench/round8d_gpu.sh (round 2, session 12, the session's last call): every GPU test;
# gemm_tiled model 100 on three more seeds (9, 11, 5), prev (var/prev_tune.lua, the
# strategy before think named the random start's batches) against new, alternated on
# one machine, empty compile caches; then Kernel Tuner and kloop on the same points
# (bench/kt_gpu/run.sh; build/ktwheels carried). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
prev_new 9 11 5
OUT=$T/kt timeout 280 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> $L
tail -22 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
