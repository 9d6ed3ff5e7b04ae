#!/usr/bin/env bash
# bench/round10b_gpu.sh (round 2, session 15): the library reference timed where the GPU
# idles (the first compile wait that finds its child ready, else after the search; the
# child's cuInit before its go) against the commit before it (dbb250a, built by hand as
# build/old/kloop), alternated on one machine, empty compile caches: gemm_tiled model 100
# at seeds 7, 13 and 21, and random 100 at seed 9; each run's library line and its
# child's steps (KLOOP_WAITS_LOG); first, whether the probe slows the worker's start beside
# it (bench/start_contention.lua). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
lib_row() {
  row "  library" "$(grep -h '^library:' "$O"/tune_"$1".log | cut -c1-80); $(grep -h '^[0-9.]* library' "$T/waits.log" | cut -d' ' -f2- | head -1)"
}
use_bin new
build/kloop bench/start_contention.lua 4 > "$T/sc.txt" 2>&1
{ echo "== start contention"; cat "$T/sc.txt"; } >> "$L"
row "contention" "$(grep CONTENTION "$T/sc.txt")"
for seed in 7 13 21; do
  for b in old new; do
    ab_row "model$seed$b" "$b" "" --method model --seed "$seed"
    lib_row "model$seed$b"
  done
done
for b in old new; do
  ab_row "random9$b" "$b" "" --method random --seed 9
  lib_row "random9$b"
done
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
