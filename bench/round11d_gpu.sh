#!/usr/bin/env bash
# bench/round11d_gpu.sh (round 2, session 16): where a model search's long compile waits
# come from: gemm_tiled model 100 at seeds 13, 19 and 11 with the change, each run's whole
# KLOOP_WAITS_LOG kept (tarred: waits.tgz), with what each wait could take meanwhile (the
# next batch's runnable, the spares think offered, the room). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in 13 19 11; do
  ab_row "model${seed}" new "" --method model --seed "$seed"
  cp "$T/waits.log" "$O/waits_$seed.log"
  row "  long waits" "$(awk '$2 == "wait" && $3 > 0.3 {printf "%s ", $3}' "$O/waits_$seed.log")"
done
(cd "$O" && tar czf waits.tgz waits_*.log tune_*.log && rm -f waits_*.log tune_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
