#!/usr/bin/env bash
# bench/round2r_gpu.sh: the session's last call: GPU busy of gemm_tiled tune runs with
# the model's choice made in think (one batch ahead after 16 evaluations), and the
# quickstart's search (tune gemm_tiled, 45 candidates, seed 1, default options); a
# table last.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 model 3" "100 model 5" "45 model 2" "100 random 2" > "$O/busy.txt" 2>&1
$K tune kernels/gemm_tiled.lua --budget 45 --seed 1 --no-store > "$O/quickstart_search.log" 2>&1
echo "quickstart search: exit $? $(grep -E '^(run|best|time):' "$O/quickstart_search.log" | cut -c1-150 | tr '\n' ' ')"
cat "$O/busy.txt"
