#!/usr/bin/env bash
# bench/round9d_gpu.sh (round 2, session 14): what a binary is (its image id, static data,
# log and resources) kept by key as its compiler ends (63bcd9d), against the commit before
# it (d9681a9, the compile memo, built by hand as build/old/kloop), alternated on one
# machine, empty compile caches: gemm_tiled model 100 (seeds 7, 13, 21) and stencil 22
# (twice), every run's requests split by bench/request_gaps.py; then one more new model
# run with the driver's CPU sampled (KLOOP_LUAPROF). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
old_new_gaps 7 13 21
export KLOOP_LUAPROF=$T/prof.txt
ab_row "model7 new prof" new "" --method model --seed 7
unset KLOOP_LUAPROF
{ echo "== driver CPU, model7 new"; head -75 "$T/prof.txt"; } >> "$L" 2>&1
row "  driver CPU" "$(head -1 "$T/prof.txt")"
rm -f "$O"/tune_*old.log
printf '%s\n' "${rows[@]}" | cut -c1-300
