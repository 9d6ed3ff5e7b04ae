#!/usr/bin/env bash
# bench/round3c_gpu.sh: after a batch runs whichever binary is ready first (and think
# runs in the wait): bench/round3a_gpu.sh's runs (gemm_tiled random 100, model 100
# with an empty cache and again with it kept, saxpy), then the quickstart's search
# (model 45, seed 1) with an empty cache; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
OUT=$O bash bench/round3a_gpu.sh > "$T/r3a.txt" 2>&1
export KLOOP_CACHE=$T/q
s=$(date +%s.%N)
build/kloop tune kernels/gemm_tiled.lua --budget 45 --seed 1 --no-store --profile none --promote off > "$T/q.log" 2>&1
rc=$?; e=$(date +%s.%N)
cat "$T/r3a.txt"
printf '%-24s %s\n' "quickstart 45" "exit $rc process $(awk "BEGIN{printf \"%.1f\", $e-$s}") s; $(grep -E '^run ' "$T/q.log" | cut -c1-100)"
printf '%-24s %s\n' "  time" "$(grep -E '^time:' "$T/q.log" | cut -c11-220)"
printf '%-24s %s\n' "  best" "$(grep -E '^best:' "$T/q.log" | cut -c1-120)"
