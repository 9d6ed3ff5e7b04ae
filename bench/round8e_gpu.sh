#!/usr/bin/env bash
# bench/round8e_gpu.sh (round 2, session 12; it measured a change that was dropped, and
# `--cascade always` existed only in that change): --cascade on stopped screening where screens did
# not pay. Kernel Tuner and kloop on the same points (bench/kt_gpu/run.sh: its cascade runs
# are --cascade on), then the same kloop runs with --cascade always (every candidate
# screened, as --cascade on did before), empty compile caches. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
OUT=$T/kt timeout 300 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> $L
for t in gemm_tiled saxpy stencil; do
  pts=$T/kt/points/$t.tsv
  n=$(($(grep -vc '^#' "$pts") - 1))
  for mode in always on; do
    fresh_cache
    if [ $t = stencil ]; then strat=(tune kernels/$t.lua --method exhaustive); else strat=(bench/kt_gpu/points.lua kernels/$t.lua --points "$pts"); fi
    s=$(date +%s.%N)
    $K "${strat[@]}" --budget $((n + 1)) --no-store --profile none --promote off --seed 1 --cascade $mode > "$T/c.log" 2>&1
    e=$(date +%s.%N)
    { echo "== $t cascade $mode"; grep -E '^(run |stages|best:|time:)|cascade stops' "$T/c.log"; } >> $L
    row "$t $mode" "$(grep -E '^run ' "$T/c.log" | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s; $(grep -E '^stages' "$T/c.log" | cut -c1-150)"
  done
done
tail -22 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
