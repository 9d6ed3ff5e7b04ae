#!/usr/bin/env bash
# bench/round15e_gpu.sh (round 2, session 20): tests/gpu/check_device.lua on the new
# kernels and on the two mutants (var/mut1: the check kernel drops the words after the
# last 16 bytes; var/mut2: the comparison drops the last element of a partial group of
# four: both must fail), every GPU test, and gemm_tiled model 100 at seeds 7 13 3 17
# (SEEDS), var/pre (c19fbfd's Lua) against new, alternated. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
check_device_rows new mut1 mut2
gpu_tests_row
for seed in ${SEEDS:-7 13 3 17}; do
  VARIANT=var/pre ab_row "model${seed} pre" var "" --method model --seed "$seed"
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
grep -E "^(FAIL|PASS|state|comparison)" "$L" | head -12 | cut -c1-200
tail -12 "$T/gpu_tests.txt" | cut -c1-160
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-220
