#!/usr/bin/env bash
# bench/round8f_gpu.sh (round 2, session 12): round8c's side-by-side on more seeds
# (SEEDS, default 17 19 21): gemm_tiled model 100, prev (var/prev_tune.lua: here the strategy of
# 8569ed7) against new, alternated on one machine, empty compile caches, each run's waits
# and thinks logged. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
prev_new ${SEEDS:-17 19 21}
printf '%s\n' "${rows[@]}" | cut -c1-300
