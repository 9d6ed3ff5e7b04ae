#!/bin/sh
# bench/mpi_overhead.sh: what MPI costs per evaluation on a host task (docs/SCALE.md):
# (1) one candidate at a time through a remote worker against a local one (mpi_overhead.lua);
# (2) a whole tune run on 2 workers: `--workers 2` against 1 local + 1 remote (mpirun -n 2),
#     the same seed, so the same candidates; seconds per evaluation from the wall time.
# usage: sh bench/mpi_overhead.sh [BUILD_DIR] [BUDGET]   (from the repo root)
set -eu
B=${1:-build}
BUDGET=${2:-24}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe --mca orte_enable_recovery 1"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
TASK=examples/cpu/sgemm_blocked.c
echo "== one at a time, alternating (4 points x 5 rounds)"
$MPIRUN -n 2 "$B/kloop-mpi" bench/mpi_overhead.lua $TASK 5 2>&1 | grep -v "PMIX ERROR"
ARGS="strategies/tune.lua $TASK --method random --budget $BUDGET --seed 4 --timing-budget 0.02 --quiet"
now() { date +%s.%N; }
per_eval() { # db, seconds
  n=$(sqlite3 "$1" "select count(*) from evaluations")
  awk -v s="$2" -v n="$n" 'BEGIN { printf "%d evaluations in %.2f s: %.3f s per evaluation", n, s, s / n }'
}
echo "== a tune run, budget $BUDGET, on 2 workers"
t0=$(now)
# shellcheck disable=SC2086
"$B/kloop" $ARGS --workers 2 --db "$W/local.db" >/dev/null 2>&1
t1=$(now)
# shellcheck disable=SC2086
$MPIRUN -n 2 "$B/kloop-mpi" $ARGS --db "$W/mpi.db" >/dev/null 2>&1
t2=$(now)
Q="select c.id, c.params_json is null, (select group_concat(verdict) from evaluations e where e.candidate_id = c.id) from candidates c order by c.id"
same=no
[ "$(sqlite3 "$W/local.db" "$Q")" = "$(sqlite3 "$W/mpi.db" "$Q")" ] && same=yes
echo "local, --workers 2:           $(per_eval "$W/local.db" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')")"
echo "mpirun -n 2 (1 local+1 remote): $(per_eval "$W/mpi.db" "$(awk -v a="$t1" -v b="$t2" 'BEGIN{print b-a}')") (mpirun's start included)"
echo "same candidates and verdicts: $same"
