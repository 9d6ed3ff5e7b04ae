#!/bin/sh
# tests/mpi/same_run.sh: issue 21's CI check: a tune run through `mpirun -n 3 kloop-mpi`
# (two remote workers) stores the same candidates (params) and verdicts, in the same
# order, as the same command run by kloop alone.
set -u
. "$(dirname "$0")/common.sh"
ARGS="strategies/tune.lua examples/cpu/sgemm_blocked.c --method random --budget 8 --seed 4 --timing-budget 0.02 --quiet"
# shellcheck disable=SC2086
$MPIRUN -n 3 "$BUILD/kloop-mpi" $ARGS --db "$WORK/mpi.db" >"$WORK/mpi.out" 2>&1
echo "mpirun: status $?"
quiet_pmix <"$WORK/mpi.out" | tail -3
# shellcheck disable=SC2086
"$BUILD/kloop" $ARGS --db "$WORK/local.db" >"$WORK/local.out" 2>&1 || fail "kloop alone: status $?"
# candidate order, its params (keys sorted: the JSON's key order is not part of the contract)
# and its verdicts in the order they were stored
Q="select c.id, (select group_concat(key || '=' || value, ' ') from (select key, value from json_each(c.params_json)
  order by key)), (select group_concat(verdict || '/' || coalesce(stage, ''), ' ') from (select verdict, stage
  from evaluations e where e.candidate_id = c.id order by e.id)) from candidates c order by c.id;
  select status from runs;"
sqlite3 "$WORK/mpi.db" "$Q" >"$WORK/mpi.txt" || fail "no store from the MPI run"
sqlite3 "$WORK/local.db" "$Q" >"$WORK/local.txt" || fail "no store from the local run"
remote=$(sqlite3 "$WORK/mpi.db" "select count(*) from evaluations where extra_json like '%\"remote\"%'")
[ "$remote" -gt 0 ] || fail "no evaluation ran on a remote worker"
diff "$WORK/local.txt" "$WORK/mpi.txt" || fail "the MPI run differs from the local one"
tail -1 "$WORK/mpi.txt" | grep -qx done || fail "the MPI run did not end done"
echo "mpi same run: $(grep -c '|' "$WORK/mpi.txt") candidates, the same params and verdicts ($remote evaluations remote)"
