#!/usr/bin/env bash
# bench/round4f_gpu.sh: session 8's last call. Every GPU test; a stored gemm_tiled model
# 100 run (seed 5, empty compile cache) killed by SIGKILL after 7 s and resumed: its
# store counted (candidates, evaluations, twice, none, crashed: only what was in flight,
# unsettled rows left) and its best against the store's; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
fresh_cache
q() { build/kloop bench/store_counts.lua "$T/k.db" 2>&1; }
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/killed.log" 2>&1 &
pid=$!; sleep 7; kill -KILL $pid; wait $pid; rc1=$?
after_kill=$(q)
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --resume 1 --profile none --promote off > "$O/resumed.log" 2>&1
rc2=$?
cat "$T/gpu_tests.txt"
echo "killed           exit $rc1; store then: $after_kill"
echo "resumed          exit $rc2 $(grep -E '^run |^resumed' "$O/resumed.log" | cut -c1-110 | tr '\n' ' ')"
echo "store            $(q)"
echo "best             $(grep -E '^best:' "$O/resumed.log" | cut -c1-90) / store: $(build/kloop best 1 --db "$T/k.db" 2>&1 | head -1 | cut -c1-90)"
