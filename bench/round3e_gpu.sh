#!/usr/bin/env bash
# bench/round3e_gpu.sh: after candidates of the next batch (named exactly by think) run
# while a batch's last binaries compile: gemm_tiled model 100 (seeds 7 and 3) and
# random 100 with an empty compile cache, GPU busy and each compile wait logged; the
# quickstart's search (model 45, seed 1); a stored model 100 run whose candidates and
# evaluations are counted (each candidate evaluated once, none without one); a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
fresh() { rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache; }
run() { # LABEL METHOD SEED BUDGET
  fresh
  KLOOP_WAITS_LOG=$O/waits_$1.txt OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua "$4" --seed "$3" \
    --timing-budget 0.3 --promote off --method "$2" > "$T/busy.log" 2>&1
  row "$1" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-230)"
  row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-100)"
  row "  waits" "$(awk '{n++; s+=$3} END {printf "%d waits, %.1f s", n, s}' "$O/waits_$1.txt" 2>/dev/null)"
  cp "$T"/gpu_busy.*/tune.log "$O/tune_$1.log"; rm -rf "$T"/gpu_busy.*
}
run model7 model 7 100
run model3 model 3 100
run random9 random 9 100
run quick45 model 1 45
fresh
build/kloop tune kernels/gemm_tiled.lua --budget 100 --seed 5 --db "$T/k.db" --profile none --promote off > "$O/stored.log" 2>&1
rc=$?
counts=$(build/kloop -e "
local db = assert(require('kloop.store.db').open('$T/k.db', { create = false }))
local c = db:query('SELECT count(*) AS n FROM candidates')[1].n
local e = db:query('SELECT count(*) AS n FROM evaluations')[1].n
local d = db:query('SELECT count(*) AS n FROM (SELECT candidate_id FROM evaluations GROUP BY candidate_id HAVING count(*) > 1)')[1].n
local none = db:query('SELECT count(*) AS n FROM candidates WHERE id NOT IN (SELECT candidate_id FROM evaluations)')[1].n
print(string.format('candidates %d, evaluations %d, evaluated twice %d, without one %d', c, e, d, none))" 2>&1)
row "stored model 100" "exit $rc $(grep -E '^run ' "$O/stored.log" | cut -c1-90)"
row "  store" "$counts"
row "  time" "$(grep -E '^time:' "$O/stored.log" | cut -c11-200)"
for r in "${rows[@]}"; do echo "$r"; done
