#!/usr/bin/env bash
# bench/round14d_gpu.sh (round 2, session 19): the session's changes together (new: the
# clocks read during timed repetitions, choosing ahead on time after a spill, the cheaper
# think) against the session's start (var/pre: 1d7b755's Lua; var/prev_tune.lua: its
# strategy), alternated on one machine, empty compile caches: gemm_tiled model 100 at
# seeds 7 13 3 17 21 9 5 11 (SEEDS), each with nvidia-smi's samples and its waits in the
# log (bench/idle_map.py). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in ${SEEDS:-7 13 3 17 21 9 5 11}; do
  for v in pre new; do
    export KEEP_SMI=$T/smi.csv
    if [ $v = pre ]; then
      export BUSY_STRATEGY=var/prev_tune.lua
      VARIANT=var/pre ab_row "model${seed}_$v" var "" --method model --seed "$seed"
      unset BUSY_STRATEGY
    else
      ab_row "model${seed}_$v" new "" --method model --seed "$seed"
    fi
    { echo "== smi model${seed}_$v"; cat "$T/smi.csv"; echo "== raw waits model${seed}_$v"; cat "$T/waits.log"; } >> "$L"
    unset KEEP_SMI
  done
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
python3 bench/idle_map.py "$L" 2>&1 | tee -a "$L"
printf '%s\n' "${rows[@]}" | grep -E "^model" | cut -c1-160
