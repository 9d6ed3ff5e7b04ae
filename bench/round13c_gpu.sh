#!/usr/bin/env bash
# bench/round13c_gpu.sh (round 2, session 18, the last call): on another fresh machine,
# Kernel Tuner on all three spaces with the session's end, and gemm_tiled model 100 at
# seeds 3 and 17 with the commit before the timed-launch verification (var/pre) and with
# the session's end, alternated: rate, GPU busy, compile waits. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
OUT=$T/kt timeout 300 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
(cd "$T/kt" && tar czf "$O/kt.tgz" . 2>/dev/null)
for seed in 3 17; do
  VARIANT=var/pre ab_row "model${seed} pre" var "" --method model --seed "$seed"
  ab_row "model${seed} new" new "" --method model --seed "$seed"
done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
tail -16 "$T/kt.txt" | cut -c1-250
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
