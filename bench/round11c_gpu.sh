#!/usr/bin/env bash
# bench/round11c_gpu.sh (round 2, session 16, the last call): every GPU test with the
# session's changes, then gemm_tiled model 100 at seeds 7 and 13 and random 100 at seed 9
# (empty compile caches), each run's library line and where its child was let go. One
# log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
for run in "model7 --method model --seed 7" "model13 --method model --seed 13" "random9 --method random --seed 9"; do
  set -- $run
  label=$1
  shift
  ab_row "$label" new "" "$@"
  row "  library" "$(grep -h '^library:' "$O/tune_$label.log" | cut -c10-40); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | tr '\n' ' ' | cut -c1-150)"
done
tail -12 "$T/gpu_tests.txt"
printf '%s\n' "${rows[@]}" | cut -c1-300
