#!/usr/bin/env bash
# bench/round15g_gpu.sh (round 2, session 20): after the review's mends: check_device on the
# new kernels and on the two mutants (var/mut1, var/mut2: both must fail), then every GPU
# test. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
check_device_rows new mut1 mut2
gpu_tests_row
tail -12 "$T/gpu_tests.txt" | cut -c1-160
printf '%s\n' "${rows[@]}" | cut -c1-220
