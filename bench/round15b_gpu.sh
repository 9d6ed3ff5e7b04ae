#!/usr/bin/env bash
# bench/round15b_gpu.sh (round 2, session 20): the worker's steps around the kernel with
# the GPU's work held fixed (bench/worker_cost.lua: 30 evaluations of the task's own
# kernel, 5 repetitions exactly), var/pre (c19fbfd's Lua: pageable copies in the state
# checks, the module reloaded between repetitions) against new, alternated twice; every GPU
# test; the timelines of gemm_tiled and stencil; gemm_tiled model 100 at seeds 7 13 3
# (SEEDS), pre against new. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
cost_pairs "gemm_tiled stencil saxpy" pre new
gpu_tests_row
for t in "gemm_tiled 12 0.3" "stencil 21 1.0"; do
  set -- $t
  fresh_cache
  { echo "== breakdown $1 timeline"; TIMELINE=1 timeout 120 $K bench/eval_breakdown.lua "$2" "$3" "kernels/$1.lua" 2>&1; } > "$T/bd.txt"
  cat "$T/bd.txt" >> "$L"
  row "$1 timeline" "$(grep -E '^TIMELINE' "$T/bd.txt" | cut -c11-200)"
done
for seed in ${SEEDS:-7 13 3}; do
  VARIANT=var/pre ab_row "model${seed} pre" var "" --method model --seed "$seed"
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
tail -12 "$T/gpu_tests.txt" | cut -c1-160
for t in gemm_tiled stencil; do
  echo "== $t"; awk "/== breakdown $t timeline/{f=1} f" "$L" | grep -A24 '^TIMELINE' | head -24
done
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-220
