Strategies on a host task (no GPU, no LLM): the tune proposer end to end.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ T="$KLOOP_SRC/examples/cpu/sgemm_blocked.c"

A strategy lists its options:

  $ kloop "$KLOOP_SRC/strategies/tune.lua" help | head -3
  tune: search the task's tunable parameters (-D defines); no network
  
  usage: kloop */strategies/tune.lua TARGET [--option value ...] (glob)

One run seed drives every choice: the same seed proposes the same points.

  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$T" --budget 5 --seed 11 --timing-budget 0.02 --explore 1 | grep '^\[' | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*' > a.txt
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$T" --budget 5 --seed 11 --timing-budget 0.02 --explore 1 | grep '^\[' | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*' > b.txt
  $ wc -l < a.txt; cmp a.txt b.txt && echo same
  5
  same
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$T" --budget 5 --seed 12 --timing-budget 0.02 --explore 1 | grep '^\[' | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*' | cmp -s - a.txt || echo differs
  differs

The run stops at the first budget and says which:

  $ kloop "$KLOOP_SRC/strategies/beam.lua" "$T" --budget 3 --seed 2 --timing-budget 0.02 --quiet | grep -E '^run|^verdicts'
  run done (budget: candidates) on sgemm_blocked_cpu: 3 candidates in * (glob)
  verdicts: ok 4
  $ kloop greedy "$T" --budget 100 --time 1 --seed 2 --timing-budget 0.02 --quiet | grep -o 'budget: time'
  budget: time

--report FILE keeps the HTML report of the run (kloop report) up to date while it runs,
and writes it once more at the end; --promote takes auto or off:

  $ kloop tune "$T" --budget 2 --seed 2 --timing-budget 0.02 --promote off --report live.html --quiet > /dev/null; echo "exit $?"
  exit 0
  $ R=$(sqlite3 kloop.db "SELECT max(id) FROM runs"); grep -c "run $R" live.html | awk '$1 >= 1 { print "the report names the run" }'
  the report names the run
  $ kloop tune "$T" --promote maybe; echo "exit $?"
  kloop: --promote maybe: give auto or off
  exit 2

A custom strategy from docs/SCRIPTING.md runs unchanged from another directory:

  $ mkdir elsewhere && cp "$KLOOP_SRC/examples/strategies/random_walk.lua" elsewhere/ && cd elsewhere
  $ kloop random_walk.lua "$T" --budget 3 --seed 5 --timing-budget 0.02 --quiet | grep -E '^run|^random_walk best' | sed 's/ in .*//'
  random_walk best: * (glob)
  run done (budget: candidates) on sgemm_blocked_cpu: 3 candidates
  $ cd ..

Bad options and targets:

  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$T" --bogus 1; echo "exit $?"
  kloop: unknown option --bogus (see: kloop STRATEGY help)
  exit 2
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$KLOOP_SRC/examples/cpu/sgemm.c" --budget 2 2>&1 | tail -1; echo "exit ${PIPESTATUS[0]}"
  kloop: init: task sgemm_cpu declares no params: nothing to tune (add params = {NAME = {values}})
  exit 1

Ctrl-C ends the run cleanly: done runs, the summary says interrupted, exit 130.
(A strategy that never runs out of candidates, so only Ctrl-C ends it.)

  $ printf 'return { name = "forever", propose = function(ctx) return { { source = ctx.task.source .. "\\n// " .. #ctx.history } } end,\n  done = function(ctx) print("done ran") end }\n' > forever.lua
  $ "$KLOOP" forever.lua "$T" --budget 100000 --timing-budget 0.05 --quiet > forever.out & pid=$!; sleep 2; kill -INT $pid; wait $pid; echo "exit $?"; grep -E '^run|^done ran' forever.out | sed 's/: .*//'
  exit 130
  done ran
  run interrupted (Ctrl-C) on sgemm_blocked_cpu

Every evaluation is in the store as it happens; kill -9 in the middle of a run, then
--resume finishes its budget without evaluating anything twice:

  $ export KLOOP_DB=$PWD/resume.db
  $ KLOOP_CACHE=$PWD/resume-cache "$KLOOP" "$KLOOP_SRC/strategies/tune.lua" "$T" --budget 30 --seed 9 --timing-budget 0.05 --quiet > /dev/null 2>&1 &
  $ for i in $(seq 400); do n=$(sqlite3 resume.db "SELECT count(*) FROM evaluations" 2>/dev/null); [ "${n:-0}" -ge 3 ] && break; sleep 0.05; done
  $ kill -9 $! && wait $! 2>/dev/null; echo "exit $?"
  exit 137
  $ kloop runs --json | python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print(r['status'] in ('running', 'stale'), 0 < r['n_evaluated'] < 31)"
  True True
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$T" --resume 1 --timing-budget 0.05 --quiet | grep -E '^run' | sed 's/ on .*//'
  run done (budget: candidates)
  $ kloop runs --json | python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print(r['status'], r['n_evaluated'], r['seed'])"
  done 31 9
  $ sqlite3 resume.db "SELECT count(*) = count(DISTINCT c.source_hash || coalesce(c.params_json, '')) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id"
  1
  $ sqlite3 resume.db "PRAGMA integrity_check"
  ok

A candidate is in the store before its evaluation starts. Kill -9 while one is being
evaluated (D=3 of this task spins past its 5 s deadline): it is stored, with its
parameters and no evaluation; --resume marks it crashed, never runs it again, and
finishes the budget:

  $ export KLOOP_DB=$PWD/inflight.db KLOOP_CACHE=$PWD/inflight-cache
  $ S="$KLOOP_SRC/tests/store/slow/slow.c"
  $ D3="SELECT c.id FROM candidates c WHERE c.params_json = '{\"D\":3}'"
  $ "$KLOOP" "$KLOOP_SRC/strategies/tune.lua" "$S" --budget 6 --seed 3 --timing-budget 0.02 --quiet > /dev/null 2>&1 &
  $ for i in $(seq 400); do [ -n "$(sqlite3 inflight.db "$D3" 2>/dev/null)" ] && break; sleep 0.05; done
  $ kill -9 $! && wait $! 2>/dev/null; echo "exit $?"
  exit 137
  $ sqlite3 inflight.db "SELECT c.params_json, c.proposer, (SELECT count(*) FROM evaluations e WHERE e.candidate_id = c.id) FROM candidates c WHERE c.id IN ($D3)"
  {"D":3}|tune|0
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$S" --resume 1 --timing-budget 0.02 --quiet=false | grep -E '^resumed|^run|D=3' | sed 's/ in .*//'
  resumed run 1: * evaluations restored, 1 marked crashed (kloop stopped during their evaluation) (glob)
  run done (budget: candidates) on slow_cpu: 6 candidates
  $ sqlite3 inflight.db "SELECT e.verdict, e.reason FROM evaluations e WHERE e.candidate_id IN ($D3)"
  crashed|kloop stopped during this candidate's evaluation (run resumed)
  $ sqlite3 inflight.db "SELECT status, (SELECT count(*) FROM candidates), (SELECT count(*) FROM evaluations), (SELECT count(DISTINCT candidate_id) FROM evaluations) FROM runs"
  done|7|7|7

Ctrl-C is not the candidate's fault: an evaluation it cuts short is not recorded, the
run ends interrupted, and --resume evaluates that candidate again (the same row):

  $ export KLOOP_DB=$PWD/sigint.db
  $ "$KLOOP" "$KLOOP_SRC/strategies/tune.lua" "$S" --budget 6 --seed 3 --timing-budget 0.02 --quiet > /dev/null 2>&1 & pid=$!
  $ for i in $(seq 400); do [ -n "$(sqlite3 sigint.db "$D3" 2>/dev/null)" ] && break; sleep 0.05; done
  $ kill -INT $pid; wait $pid; echo "exit $?"
  exit 130
  $ sqlite3 sigint.db "SELECT r.status, (SELECT count(*) FROM evaluations e WHERE e.candidate_id IN ($D3)) FROM runs r"
  interrupted|0
  $ kloop "$KLOOP_SRC/strategies/tune.lua" "$S" --resume 1 --timing-budget 0.02 --quiet=false | grep -E '^resumed|D=3'
  resumed run 1: * evaluations restored, 1 interrupted evaluated again (glob)
  [  *] timeout                               D=3* (glob)
  $ sqlite3 sigint.db "SELECT e.verdict FROM evaluations e WHERE e.candidate_id IN ($D3); SELECT count(*) FROM candidates WHERE params_json = '{\"D\":3}'"
  timeout
  1
