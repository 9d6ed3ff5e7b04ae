#!/usr/bin/env bash
# bench/round4g_gpu.sh: results stored unsettled on the GPU: a stored gemm_tiled model
# 100 run killed by SIGKILL at 4.5 s and at 9 s (two runs), the store counted right after
# each kill (unsettled rows left), then resumed and counted again; every log kept in
# $OUT. A table last. (Its one run, on the session's last device minutes, kept no logs:
# the second run, fresh on a warm compile cache, had ended by itself after its baseline
# before the 9 s kill; this version keeps them, to see why.)
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
export KLOOP_CACHE=$T/cache; mkdir -p $KLOOP_CACHE
q() { build/kloop bench/store_counts.lua "$1" 2>&1; }
for at in 4.5 9; do
  db=$T/k$at.db
  build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 7 --timing-budget 0.3 --db "$db" --profile none --promote off > "$O/killed_$at.log" 2>&1 &
  pid=$!; sleep $at; kill -KILL $pid; wait $pid 2>/dev/null
  echo "kill at $at s   $(q $db)"
  build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 7 --timing-budget 0.3 --db "$db" --resume 1 --profile none --promote off > $T/r.log 2>&1; cp $T/r.log "$O/resumed_$at.log"
  echo "  resumed, exit $? $(grep -E '^resumed' $T/r.log | cut -c1-150)"
  echo "  store          $(q $db)"
  echo "  best           $(grep -E '^best:' $T/r.log | cut -c11-60) / store: $(build/kloop best 1 --db "$db" 2>&1 | head -1 | cut -c1-50)"
done
