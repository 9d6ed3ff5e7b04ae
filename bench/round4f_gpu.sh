#!/usr/bin/env bash
# bench/round4f_gpu.sh: session 8's last call. Every GPU test; a stored gemm_tiled model
# 100 run (seed 5, empty compile cache) killed by SIGKILL after 7 s and resumed: its
# store counted (candidates, evaluations, twice, none, crashed: only what was in flight,
# unsettled rows left) and its best against the store's; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
L=$T/tests; mkdir -p $L
timeout 300 env OUT=$L bash bench/gpu_tests.sh > "$T/tests.txt" 2>&1
export KLOOP_CACHE=$T/cache; mkdir -p $KLOOP_CACHE
q() { build/kloop -e "
local db = assert(require('kloop.store.db').open('$T/k.db', { create = false }))
local q = function(s) return db:query(s)[1].n end
print(string.format('candidates %d, evaluations %d, evaluated twice %d, without one %d, crashed %d, unsettled %d, filled %d',
  q('SELECT count(*) AS n FROM candidates'), q('SELECT count(*) AS n FROM evaluations'),
  q('SELECT count(*) AS n FROM (SELECT candidate_id FROM evaluations GROUP BY candidate_id HAVING count(*) > 1)'),
  q('SELECT count(*) AS n FROM candidates WHERE id NOT IN (SELECT candidate_id FROM evaluations)'),
  q(\"SELECT count(*) AS n FROM evaluations WHERE verdict = 'crashed'\"),
  q(\"SELECT count(*) AS n FROM evaluations WHERE json_extract(extra_json, '$.unsettled') = 1\"),
  q(\"SELECT count(*) AS n FROM evaluations WHERE json_extract(extra_json, '$.filled') = 1\")))" 2>&1; }
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/killed.log" 2>&1 &
pid=$!; sleep 7; kill -KILL $pid; wait $pid; rc1=$?
after_kill=$(q)
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --resume 1 --profile none --promote off > "$O/resumed.log" 2>&1
rc2=$?
cat "$T/tests.txt"
echo "killed           exit $rc1; store then: $after_kill"
echo "resumed          exit $rc2 $(grep -E '^run |^resumed' "$O/resumed.log" | cut -c1-110 | tr '\n' ' ')"
echo "store            $(q)"
echo "best             $(grep -E '^best:' "$O/resumed.log" | cut -c1-90) / store: $(build/kloop best 1 --db "$T/k.db" 2>&1 | head -1 | cut -c1-90)"
