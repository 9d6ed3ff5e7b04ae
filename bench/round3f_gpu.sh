#!/usr/bin/env bash
# bench/round3f_gpu.sh: the session's last call, after the review's mends (results
# settled as soon as the ones before them are in, the library's child without a CUDA
# context before its go, a resumed history in settle order): every GPU test, then
# gemm_tiled model 100 (seed 7), random 100 (seed 9) and the quickstart's model 45
# (seed 1) with empty compile caches and GPU busy, and a stored model 100 run stopped by
# SIGTERM after 6 s and resumed, its store counted (each candidate evaluated once, none
# without one) and its best against the store's; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
L=$T/tests; mkdir -p $L
timeout 330 env OUT=$L bash bench/gpu_tests.sh > "$T/tests.txt" 2>&1
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
fresh() { rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache; }
run() { # LABEL METHOD SEED BUDGET
  fresh
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua "$4" --seed "$3" --timing-budget 0.3 --promote off \
    --method "$2" > "$T/busy.log" 2>&1
  row "$1" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-230)"
  row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-100)"
  cp "$T"/gpu_busy.*/tune.log "$O/tune_$1.log"; rm -rf "$T"/gpu_busy.*
}
run model7 model 7 100
run random9 random 9 100
run quick45 model 1 45
fresh
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/stored.log" 2>&1 &
pid=$!; sleep 6; kill -TERM $pid; wait $pid; rc1=$?
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --resume 1 --profile none --promote off > "$O/resumed.log" 2>&1
rc2=$?
counts=$(build/kloop -e "
local db = assert(require('kloop.store.db').open('$T/k.db', { create = false }))
local q = function(s) return db:query(s)[1].n end
print(string.format('candidates %d, evaluations %d, evaluated twice %d, without one %d, crashed %d',
  q('SELECT count(*) AS n FROM candidates'), q('SELECT count(*) AS n FROM evaluations'),
  q('SELECT count(*) AS n FROM (SELECT candidate_id FROM evaluations GROUP BY candidate_id HAVING count(*) > 1)'),
  q('SELECT count(*) AS n FROM candidates WHERE id NOT IN (SELECT candidate_id FROM evaluations)'),
  q(\"SELECT count(*) AS n FROM evaluations WHERE verdict = 'crashed'\")))" 2>&1)
row "stored, SIGTERM" "exit $rc1 $(grep -E '^run ' "$O/stored.log" | cut -c1-80)"
row "  resumed" "exit $rc2 $(grep -E '^run |^resumed' "$O/resumed.log" | cut -c1-90 | tr '\n' ' ')"
row "  store" "$counts"
row "  best" "$(grep -E '^best:' "$O/resumed.log" | cut -c1-90) / store: $(build/kloop best 1 --db "$T/k.db" 2>&1 | head -2 | tr '\n' ' ' | cut -c1-100)"
cp "$T/tests.txt" "$O/tests.txt"
cat "$T/tests.txt"
for r in "${rows[@]}"; do echo "$r"; done
