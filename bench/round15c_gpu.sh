#!/usr/bin/env bash
# bench/round15c_gpu.sh (round 2, session 20): what the GPU's time in a microsecond
# task's requests goes to (the timeline's busy split and idle split), for the full
# protocol, the cascade's screen alone and both stages in one request: stencil (21
# points, timing budget 1 s) and saxpy (5). One log; the tables last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
for t in "stencil 21" "saxpy 5"; do
  set -- $t
  for st in full screen cascade; do
    fresh_cache
    { echo "== breakdown $1 $st"; STAGE=$st TIMELINE=1 timeout 120 $K bench/eval_breakdown.lua "$2" 1.0 "kernels/$1.lua" 2>&1; } > "$T/bd.txt"
    cat "$T/bd.txt" >> "$L"
    row "$1 $st" "$(grep -E '^TIMELINE' "$T/bd.txt" | cut -c11-200)"
    row "  rate" "$(grep -E '^BREAKDOWN' "$T/bd.txt" | sed 's/.*of it in the worker/worker/' | cut -c1-150)"
  done
done
for t in "stencil full" "stencil screen" "saxpy cascade"; do
  echo "== $t"; awk "/== breakdown $t/{f=1} f" "$L" | grep -A34 '^TIMELINE' | head -34
done
printf '%s\n' "${rows[@]}" | cut -c1-220
