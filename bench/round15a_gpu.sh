#!/usr/bin/env bash
# bench/round15a_gpu.sh (round 2, session 20): every GPU test (the last session's protocol
# mends had not run under them), then where the GPU idles inside an evaluation: the
# traced breakdowns of gemm_tiled (12 points, timing budget 0.3 s) and stencil (21, 1 s),
# without and with the timeline (TIMELINE=1: CUPTI records of the GPU's kernels, copies
# and fills, the idle time split over the backend calls). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_row
for t in "gemm_tiled 12 0.3" "stencil 21 1.0"; do
  set -- $t
  for tl in 0 1; do
    fresh_cache
    { echo "== breakdown $1 timeline=$tl"; TIMELINE=$tl timeout 120 $K bench/eval_breakdown.lua "$2" "$3" "kernels/$1.lua" 2>&1; } > "$T/bd.txt"
    cat "$T/bd.txt" >> "$L"
    row "$1 tl=$tl" "$(grep -E '^BREAKDOWN' "$T/bd.txt" | sed 's/.*(ok/(ok/' | cut -c1-170)"
    [ "$tl" = 1 ] && row "  timeline" "$(grep -E '^TIMELINE' "$T/bd.txt" | cut -c11-200)"
  done
done
tail -12 "$T/gpu_tests.txt" | cut -c1-160
for t in gemm_tiled stencil; do
  echo "== $t"; awk "/== breakdown $t timeline=1/{f=1} f" "$L" | grep -A40 '^TIMELINE' | head -36
done
printf '%s\n' "${rows[@]}" | cut -c1-220
