#!/usr/bin/env bash
# bench/round8c_gpu.sh (round 2, session 12): think names the next batch exactly where no
# result moves it (the model's random start, random draws, an exhaustive queue), so the
# driver runs one of it while a batch's last compile. gemm_tiled model 100, seeds 13, 7
# and 3, alternated on one machine, empty compile caches: prev (var/prev_tune.lua, the
# strategy before) against new; every compile queued, started, failed to start, found
# cached, every wait and think (KLOOP_WAITS_LOG), nvidia-smi's samples (KEEP_SMI).
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
for seed in 13 7 3; do
  for v in prev new; do
    export KEEP_SMI=$T/smi.csv
    if [ $v = prev ]; then export BUSY_STRATEGY=var/prev_tune.lua; else unset BUSY_STRATEGY; fi
    ab_row "model$seed $v" new "" --method model --seed $seed
    { echo "== smi model$seed$v"; cat "$T/smi.csv"; echo "== raw waits model$seed$v"; cat "$T/waits.log"; } >> $L
    unset KEEP_SMI BUSY_STRATEGY
  done
done
printf '%s\n' "${rows[@]}" | cut -c1-300
