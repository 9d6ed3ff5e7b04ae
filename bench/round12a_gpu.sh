#!/usr/bin/env bash
# bench/round12a_gpu.sh (round 2, session 17): the spill against the commit before it
# (build/old/kloop from cbfcd92, var/old_tune.lua its strategy) at four more seeds, then
# the microsecond tunes' time lines and waits logs (stencil 22, saxpy 6, twice each) and
# Kernel Tuner on the microsecond spaces, its kloop logs kept under $OUT/kt. One log; a
# table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
old_new_spills ${SEEDS:-19 11 5 21}
use_bin new
for t in stencil:22 saxpy:6; do
  for i in 1 2; do
    micro_waits "${t%%:*}$i" "${t%%:*}" "${t##*:}"
    cp "$T/t.log" "$O/tune_${t%%:*}$i.log"
    unset KLOOP_WAITS_LOG
  done
done
TASKS=saxpy,stencil OUT=$O/kt timeout 200 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
tail -12 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
