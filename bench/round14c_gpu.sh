#!/usr/bin/env bash
# bench/round14c_gpu.sh (round 2, session 19): the clocks read while a timed repetition
# runs, and choosing ahead on time after a spill (new), against the commit before (var/pre:
# its Lua; var/prev_tune.lua: its strategy), alternated on one machine, empty compile
# caches: the traced stencil breakdown; stencil 22 and saxpy 6 exhaustive, full and
# cascade; gemm_tiled model 100 at seeds 7 13 3 17 (SEEDS); every GPU test; Kernel Tuner on
# all three spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for v in pre new; do
  pick $v
  fresh_cache
  { echo "== breakdown stencil $v"; timeout 60 $K bench/eval_breakdown.lua 21 1.0 kernels/stencil.lua 2>&1; } > "$T/bd.txt"
  cat "$T/bd.txt" >> "$L"
  row "breakdown $v" "$(grep -E '^sample ' "$T/bd.txt" | tr -s ' ' | cut -c1-40); $(grep -E '^BREAKDOWN' "$T/bd.txt" | sed 's/.*(ok/(ok/' | cut -c1-150)"
done
casc_pairs pre new
for seed in ${SEEDS:-7 13 3 17}; do
  export BUSY_STRATEGY=var/prev_tune.lua
  VARIANT=var/pre ab_row "model${seed} pre" var "" --method model --seed "$seed"
  unset BUSY_STRATEGY
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
tests_and_kt
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
tail -10 "$T/gpu_tests.txt" | cut -c1-160
grep -E "^(task|gemm_tiled|saxpy|stencil) " "$T/kt.txt" | cut -c1-200
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | grep -v "^  time" | cut -c1-200
