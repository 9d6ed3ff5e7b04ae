#!/usr/bin/env bash
# bench/round10c_gpu.sh (round 2, session 15, the last call): every GPU test with the
# library change (61caa23), the probe's compute mode, one gemm_tiled model 100 (seed 7)
# with its library line and child's steps. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
row "probe" "$(build/kloop -q -e 'local g = require("kloop.core.gpu").probe(0) print(g.name, g.arch, g.compute_mode)')"
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
ab_row "model7" new "" --method model --seed 7
row "  library" "$(grep -h '^library:' "$O"/tune_model7.log | cut -c1-80); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | head -1)"
tail -12 "$T/gpu_tests.txt"
printf '%s\n' "${rows[@]}" | cut -c1-300
