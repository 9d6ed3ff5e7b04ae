#!/usr/bin/env bash
# bench/round11b_gpu.sh (round 2, session 16): as round11a, on four more seeds, with a
# third arm: the session's start (old: build/old/kloop, var/old_tune.lua), the change with
# --fill 2 (fill2: the default before and after), the change with its defaults then (new:
# --fill 8 at a budget of 100, at e15ff6a; taken back after this bench), alternated on one machine, empty compile caches: gemm_tiled model 100 at
# seeds 5, 11, 17, 19; where each library child was let go. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
[ -f var/old_tune.lua ] || { echo "var/old_tune.lua is missing (git show d463f1d:strategies/tune.lua)"; exit 1; }
lib_row() {
  row "  library" "$(grep -h '^library:' "$O"/tune_"$1".log | cut -c10-40); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | tr '\n' ' ' | cut -c1-150)"
}
for seed in 5 11 17 19; do
  export BUSY_STRATEGY=var/old_tune.lua
  ab_row "model${seed}old" old "" --method model --seed "$seed"
  unset BUSY_STRATEGY
  lib_row "model${seed}old"
  ab_row "model${seed}fill2" new "" --method model --seed "$seed" --fill 2
  lib_row "model${seed}fill2"
  ab_row "model${seed}new" new "" --method model --seed "$seed"
  lib_row "model${seed}new"
done
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
