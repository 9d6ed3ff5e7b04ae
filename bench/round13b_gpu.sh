#!/usr/bin/env bash
# bench/round13b_gpu.sh (round 2, session 18): the bench size verified on its timed
# launches, against the commit before it (var/pre: its Lua), alternated on one machine,
# empty compile caches: stencil 22 and saxpy 6 exhaustive, full and cascade, twice;
# gemm_tiled model 100 at seeds 7 and 13 (pre, new); what NVML's queries cost; every GPU
# test; Kernel Tuner on all three spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
python3 bench/nvml_calls.py 200 > "$T/nvml.txt" 2>&1
cat "$T/nvml.txt" >> "$L"
casc_pairs pre new
for seed in 7 13; do
  VARIANT=var/pre ab_row "model${seed} pre" var "" --method model --seed "$seed"
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
tests_and_kt
(cd "$T/kt" && tar czf "$O/kt.tgz" . 2>/dev/null)
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
cat "$T/nvml.txt"
tail -12 "$T/gpu_tests.txt" | cut -c1-200
tail -16 "$T/kt.txt" | cut -c1-250
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
