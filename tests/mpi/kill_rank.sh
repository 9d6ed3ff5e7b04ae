#!/bin/sh
# tests/mpi/kill_rank.sh: issue 21's CI check: kill -9 of one worker rank's kloop-mpi
# process in the middle of a tune run is survived: the run ends done, every proposed
# candidate has an evaluation, no candidate is blamed for the lost rank, the store
# records the retry, and the search's status (kloop-mpi's last line) is 0.
set -u
. "$(dirname "$0")/common.sh"
# (a run hung now and then: a surviving rank waited in MPI_Finalize for the killed one,
# fixed in kloop-mpi, docs/SCALE.md; each attempt keeps a deadline, and a second attempt
# is made once, said loudly as FLAKE, as a safety net)
attempt() {
DB="$WORK/kill$1.db"
timeout 90 $MPIRUN -n 3 "$BUILD/kloop-mpi" --rank-timeout 2 strategies/tune.lua examples/cpu/sgemm_blocked.c --method random \
  --budget 16 --seed 4 --timing-budget 0.3 --quiet --db "$DB" >"$WORK/kill.out" 2>&1 &
job=$!
n=0
for _ in $(seq 1 240); do
  sleep 0.25
  n=$(sqlite3 "$DB" "select count(*) from evaluations" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 4 ] && break
done
victim=""
for p in $(pgrep -f "kloop-mpi --rank-timeout 2 strategies/tune.lua"); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2; then victim=$p; fi
done
[ -n "$victim" ] || fail "rank 2's process not found"
echo "killing rank 2 (kill -9) after $n evaluations"
kill -9 "$victim"
wait $job
}
attempt 1
st=$?
if [ $st = 124 ]; then
  echo "FLAKE: the run with a killed rank passed its 90 s deadline; its output so far:"
  quiet_pmix <"$WORK/kill.out" | tail -10
  pkill -9 -f "kloop-mpi --rank-timeout 2 strategies/tune.lua" 2>/dev/null
  attempt 2
  st=$?
fi
echo "mpirun: status $st"
quiet_pmix <"$WORK/kill.out" | tail -4
grep -q "kloop-mpi: rank 2 lost" "$WORK/kill.out" || fail "kloop-mpi did not notice the lost rank"
grep -q "kloop-mpi: the search exited with status 0 " "$WORK/kill.out" || fail "the search did not exit 0"
[ "$(sqlite3 "$DB" "select status from runs")" = done ] || fail "the run did not end done"
missing=$(sqlite3 "$DB" "select count(*) from candidates c where not exists
  (select 1 from evaluations e where e.candidate_id = c.id)")
[ "$missing" = 0 ] || fail "$missing candidates have no evaluation"
blamed=$(sqlite3 "$DB" "select count(*) from evaluations where verdict <> 'ok' and extra_json like '%connection lost%'")
[ "$blamed" = 0 ] || fail "$blamed candidates were given the lost rank's failure as their verdict"
retried=$(sqlite3 "$DB" "select count(*) from evaluations where extra_json like '%\"retry\"%'")
[ "$retried" -gt 0 ] || fail "the store records no retry"
echo "mpi kill rank: survived; $(sqlite3 "$DB" "select count(*) from candidates") candidates, all evaluated, $retried retried"
