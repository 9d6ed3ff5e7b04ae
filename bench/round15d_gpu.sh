#!/usr/bin/env bash
# bench/round15d_gpu.sh (round 2, session 20): kloop's own kernels rewritten (the state
# check 16 bytes at a time, the comparison four elements a thread): every GPU test with
# the new tests/gpu/check_device.lua, which must fail on two mutants (var/mut1: the check
# kernel drops the words after the last 16 bytes; var/mut2: the comparison drops the last
# element of a partial group of four); the timelines of stencil (screen and full) for
# var/pre (c19fbfd's Lua) and new; bench/worker_cost.lua pre and new, alternated; the
# cascade's rates (casc_pairs) and Kernel Tuner. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
check_device_rows mut1 mut2
for v in pre new; do
  pick $v
  for st in screen full; do
    fresh_cache
    { echo "== breakdown stencil $st $v"; STAGE=$st TIMELINE=1 timeout 120 $K bench/eval_breakdown.lua 21 1.0 kernels/stencil.lua 2>&1; } > "$T/bd.txt"
    cat "$T/bd.txt" >> "$L"
    row "stencil $st $v" "$(grep -E '^TIMELINE' "$T/bd.txt" | cut -c11-120)"
    row "  busy" "$(grep -E '^(kloop_check_regions|kloop_compare) ' "$T/bd.txt" | tr -s ' ' | tr '\n' ';' | cut -c1-150)"
  done
done
cost_pairs "stencil saxpy gemm_tiled" pre new
casc_pairs pre new
tests_and_kt
tail -12 "$T/gpu_tests.txt" | cut -c1-160
grep -E "^(task|gemm_tiled|saxpy|stencil) " "$T/kt.txt" | cut -c1-200
printf '%s\n' "${rows[@]}" | cut -c1-230
