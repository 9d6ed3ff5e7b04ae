#!/usr/bin/env bash
# bench/round4d_gpu.sh: session 8's last call, after the session's changes (waits filled
# by the model's next points, batches of 12 once choosing ahead, compiles from NVML's
# arch, no A/B for a candidate with the best's code, --crown-gain 0.005, the store's
# best by newest evaluations): every GPU test; gemm_tiled model 100 (seeds 7, 3, 5),
# random 100 and the quickstart's model 45 with empty compile caches and GPU busy; a
# stored model 100 run stopped by SIGTERM after 6 s and resumed, its store counted and
# its best against the store's; Kernel Tuner on all three spaces. A table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
run() { fresh_cache; busy_rows "$@"; } # LABEL BUDGET OPTIONS...: on an empty compile cache
run model7 100 --seed 7
run model3 100 --seed 3
run model5 100 --seed 5
run random9 100 --seed 9 --method random
run quick45 45 --seed 1
fresh_cache
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/stored.log" 2>&1 &
pid=$!; sleep 6; kill -TERM $pid; wait $pid; rc1=$?
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --resume 1 --profile none --promote off > "$O/resumed.log" 2>&1
rc2=$?
counts=$(build/kloop bench/store_counts.lua "$T/k.db" 2>&1)
row "stored, SIGTERM" "exit $rc1 $(grep -E '^run ' "$O/stored.log" | cut -c1-80)"
row "  resumed" "exit $rc2 $(grep -E '^run |^resumed' "$O/resumed.log" | cut -c1-90 | tr '\n' ' ')"
row "  store" "$counts"
row "  best" "$(grep -E '^best:' "$O/resumed.log" | cut -c1-90) / store: $(build/kloop best 1 --db "$T/k.db" 2>&1 | head -2 | tr '\n' ' ' | cut -c1-100)"
unset KLOOP_CACHE
OUT=$T/kt timeout 290 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
cp "$T/kt.txt" "$O/kt.txt"
cat "$T/gpu_tests.txt"
grep -A5 "^task " "$T/kt.txt"
for r in "${rows[@]}"; do echo "$r"; done
