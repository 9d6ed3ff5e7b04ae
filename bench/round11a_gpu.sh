#!/usr/bin/env bash
# bench/round11a_gpu.sh (round 2, session 16): the search's last choice made a batch
# earlier, the driver's guesses a compilers' worth past the batch think chose, and the
# library reference let go at a compile wait expected to hide it (bf9d00d and after),
# against the session's start (d463f1d: build/old/kloop with var/old_tune.lua, its
# strategy), alternated on one machine, empty compile caches: gemm_tiled model 100 at
# seeds 7, 13, 21 and 3, random 100 at seed 9; each run's library line and where its
# child was let go (KLOOP_WAITS_LOG). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
[ -f var/old_tune.lua ] || { echo "var/old_tune.lua is missing (git show d463f1d:strategies/tune.lua)"; exit 1; }
lib_row() {
  row "  library" "$(grep -h '^library:' "$O"/tune_"$1".log | cut -c10-40); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | tr '\n' ' ' | cut -c1-150)"
}
pair() {
  local label=$1
  shift
  export BUSY_STRATEGY=var/old_tune.lua
  ab_row "${label}old" old "" "$@"
  unset BUSY_STRATEGY
  lib_row "${label}old"
  ab_row "${label}new" new "" "$@"
  lib_row "${label}new"
}
for seed in 7 13 21 3; do pair "model$seed" --method model --seed "$seed"; done
pair random9 --method random --seed 9
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
