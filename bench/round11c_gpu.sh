#!/usr/bin/env bash
# bench/round11c_gpu.sh (round 2, session 16, the last call): every GPU test with the
# session's changes, then gemm_tiled model 100 at seeds 7 and 13 against the session's
# start (as round11a: build/old/kloop, var/old_tune.lua) and random 100 at seed 9, empty
# compile caches, each run's library line and where its child was let go. One log; a
# table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
lib_row() {
  row "  library" "$(grep -h '^library:' "$O/tune_$1.log" | cut -c10-40); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | tr '\n' ' ' | cut -c1-150)"
}
for seed in 7 13; do
  export BUSY_STRATEGY=var/old_tune.lua
  ab_row "model${seed}old" old "" --method model --seed "$seed"
  unset BUSY_STRATEGY
  lib_row "model${seed}old"
  ab_row "model${seed}new" new "" --method model --seed "$seed"
  lib_row "model${seed}new"
done
ab_row random9new new "" --method random --seed 9
lib_row random9new
tail -12 "$T/gpu_tests.txt"
printf '%s\n' "${rows[@]}" | cut -c1-300
