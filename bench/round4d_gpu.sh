#!/usr/bin/env bash
# bench/round4d_gpu.sh: session 8's last call, after the session's changes (waits filled
# by the model's next points, batches of 12 once choosing ahead, compiles from NVML's
# arch, no A/B for a candidate with the best's code, --crown-gain 0.005, the store's
# best by newest evaluations): every GPU test; gemm_tiled model 100 (seeds 7, 3, 5),
# random 100 and the quickstart's model 45 with empty compile caches and GPU busy; a
# stored model 100 run stopped by SIGTERM after 6 s and resumed, its store counted and
# its best against the store's; Kernel Tuner on all three spaces. A table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
L=$T/tests; mkdir -p $L
timeout 300 env OUT=$L bash bench/gpu_tests.sh > "$T/tests.txt" 2>&1
rows=()
row() { rows+=("$(printf '%-16s %s' "$1" "$2")"); }
fresh() { rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache; }
run() { # LABEL BUDGET OPTIONS...
  local label=$1 budget=$2; shift 2
  fresh
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua "$budget" --timing-budget 0.3 --promote off "$@" > "$T/busy.log" 2>&1
  row "$label" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-200)"
  row "  waits, best" "$(grep -h -E '^waits:' "$T"/gpu_busy.*/tune.log | cut -c11-130); $(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c11-90)"
  rm -rf "$T"/gpu_busy.*
}
run model7 100 --seed 7
run model3 100 --seed 3
run model5 100 --seed 5
run random9 100 --seed 9 --method random
run quick45 45 --seed 1
fresh
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/stored.log" 2>&1 &
pid=$!; sleep 6; kill -TERM $pid; wait $pid; rc1=$?
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --resume 1 --profile none --promote off > "$O/resumed.log" 2>&1
rc2=$?
counts=$(build/kloop -e "
local db = assert(require('kloop.store.db').open('$T/k.db', { create = false }))
local q = function(s) return db:query(s)[1].n end
print(string.format('candidates %d, evaluations %d, evaluated twice %d, without one %d, crashed %d, filled %d, same code %d',
  q('SELECT count(*) AS n FROM candidates'), q('SELECT count(*) AS n FROM evaluations'),
  q('SELECT count(*) AS n FROM (SELECT candidate_id FROM evaluations GROUP BY candidate_id HAVING count(*) > 1)'),
  q('SELECT count(*) AS n FROM candidates WHERE id NOT IN (SELECT candidate_id FROM evaluations)'),
  q(\"SELECT count(*) AS n FROM evaluations WHERE verdict = 'crashed'\"),
  q(\"SELECT count(*) AS n FROM evaluations WHERE json_extract(extra_json, '$.filled') = 1\"),
  q(\"SELECT count(*) AS n FROM evaluations WHERE json_extract(extra_json, '$.ab.same_code') = 1\")))" 2>&1)
row "stored, SIGTERM" "exit $rc1 $(grep -E '^run ' "$O/stored.log" | cut -c1-80)"
row "  resumed" "exit $rc2 $(grep -E '^run |^resumed' "$O/resumed.log" | cut -c1-90 | tr '\n' ' ')"
row "  store" "$counts"
row "  best" "$(grep -E '^best:' "$O/resumed.log" | cut -c1-90) / store: $(build/kloop best 1 --db "$T/k.db" 2>&1 | head -2 | tr '\n' ' ' | cut -c1-100)"
unset KLOOP_CACHE
OUT=$T/kt timeout 290 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
cp "$T/kt.txt" "$O/kt.txt"; cp "$T/tests.txt" "$O/tests.txt"
cat "$T/tests.txt"
grep -A5 "^task " "$T/kt.txt"
for r in "${rows[@]}"; do echo "$r"; done
