#!/usr/bin/env bash
# bench/round12d_gpu.sh (round 2, session 17): every GPU test with kloop's own kernels
# shipped and the guesses held beside the worker's start, then gemm_tiled model 100 at
# the eight seeds of the spill's pairs (13 7 3 17 19 11 5 21; SEEDS: others), empty
# compile caches, each run's GPU busy. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
for seed in ${SEEDS:-13 7 3 17 19 11 5 21}; do
  ab_row "model${seed}new" new "" --method model --seed "$seed"
done
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
tail -12 "$T/gpu_tests.txt" | cut -c1-200
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
