#!/usr/bin/env bash
# bench/round14a_gpu.sh (round 2, session 19): HEAD (the bench size's two more launches
# on one load, unmeasured in session 18) on one fresh machine, empty compile caches:
# gemm_tiled model 100 at seeds 7, 13, 3 and 17 (SEEDS) with nvidia-smi's samples and
# every wait in one log (bench/idle_map.py); stencil 22 and saxpy 6 exhaustive, full and
# cascade; every GPU test; Kernel Tuner on all three spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in ${SEEDS:-7 13 3 17}; do
  export KEEP_SMI=$T/smi.csv
  ab_row "model$seed" new "" --method model --seed "$seed"
  { echo "== smi model$seed"; cat "$T/smi.csv"; echo "== raw waits model$seed"; cat "$T/waits.log"; } >> "$L"
  unset KEEP_SMI
done
for t in stencil:22 saxpy:6; do
  casc_row "${t%%:*} full" new "${t%%:*}" "${t##*:}"
  casc_row "${t%%:*} casc" new "${t%%:*}" "${t##*:}" --cascade on
done
tests_and_kt
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
python3 bench/idle_map.py "$L" 2>&1 | tee -a "$L"
tail -12 "$T/gpu_tests.txt" | cut -c1-200
tail -6 "$T/kt.txt" | cut -c1-250
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
