#!/usr/bin/env bash
# bench/round13a_gpu.sh (round 2, session 18): the cascade in one request (the worker
# promotes and reuses the screen's work) against the two requests before it (var/two:
# the same Lua with the one-request path off), alternated on one machine, empty compile
# caches: stencil 22 and saxpy 6 exhaustive, full and cascade both ways, twice; the
# cascade's margin at 1.5, 1.2 and 1.1 on stencil (the best each finds); the traced
# stencil breakdown; Kernel Tuner on all three spaces. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for i in 1 2; do
  for t in stencil:22 saxpy:6; do
    casc_row "${t%%:*}$i full" new "${t%%:*}" "${t##*:}"
    casc_row "${t%%:*}$i two" two "${t%%:*}" "${t##*:}" --cascade on
    casc_row "${t%%:*}$i one" new "${t%%:*}" "${t##*:}" --cascade on
  done
done
for m in 1.5 1.2 1.1; do casc_row "stencil m$m" new stencil 22 --cascade on --cascade-margin $m; done
use_bin new
fresh_cache
build/kloop bench/eval_breakdown.lua 21 1.0 kernels/stencil.lua > "$O/bd_stencil.txt" 2>&1
row "bd stencil" "$(grep -E '^(start|BREAKDOWN)' "$O/bd_stencil.txt" | tr '\n' ' ' | cut -c1-280)"
OUT=$T/kt timeout 300 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
(cd "$T/kt" && tar czf "$O/kt.tgz" . 2>/dev/null)
tail -22 "$T/kt.txt" | cut -c1-250
printf '%s\n' "${rows[@]}" | cut -c1-250
