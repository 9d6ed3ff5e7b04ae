The evaluation cascade on a host task (docs/TASKS.md, "Stages"): with --cascade on,
tune screens every candidate and fully evaluates only those within the margin of the best screen; the
store says which stage each evaluation reached, and only full ones are bests.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ T="$KLOOP_SRC/examples/cpu/sgemm_blocked.c"
  $ TUNE="$KLOOP_SRC/strategies/tune.lua"

Asked for with --cascade on. With a margin of 1 only a new fastest screen is promoted; each
progress line says the stage its candidate reached, the summary counts them:

  $ kloop "$TUNE" "$T" --budget 12 --seed 4 --timing-budget 0.05 --method random --cascade on --cascade-margin 1 > on.txt; echo "exit $?"
  exit 0
  $ grep -c '^\[.*  \[\(screened\|full\)\]$' on.txt
  13
  $ grep '^\[  0/12\]' on.txt | grep -o 'baseline.*'
  baseline  (best)  [full]
  $ grep -c '(best)  \[screened\]' on.txt
  0
  [1]
  $ grep -o '^stages: full [0-9]*, screened only [0-9]*' on.txt | sed 's/[0-9][0-9]*/N/g'
  stages: full N, screened only N

In the store: one evaluation per candidate with its stage; the baseline is full; a
screened evaluation has its reason say so and three timed repetitions:

  $ sqlite3 kloop.db "SELECT count(*), sum(stage = 'full') >= 1, sum(stage = 'screened') >= 1, sum(stage IS NULL) FROM evaluations"
  13|1|1|0
  $ sqlite3 kloop.db "SELECT e.stage FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.proposer = 'baseline'"
  full
  $ sqlite3 kloop.db "SELECT DISTINCT reps, substr(reason, 1, 36) FROM evaluations WHERE stage = 'screened' AND verdict = 'ok'"
  3|screened: verified on check2 x 1 inp
  $ sqlite3 kloop.db "SELECT count(*) > 0 FROM evaluations WHERE stage = 'full' AND reason LIKE 'verified on 3 sizes x 2 input sets%'"
  1
  $ kloop show 1 | grep -c 'ok (screened)' | awk '$1 >= 1 { print "screened rows shown" }'
  screened rows shown

`kloop best` is a full evaluation, the one the run crowned last (by an interleaved A/B
against the best before it, not by its median):

  $ kloop best --json | python3 -c "import json,sys; print(json.load(sys.stdin)['evaluation']['stage'])"
  full
  $ B=$(kloop best --json | python3 -c "import json,sys; print(json.load(sys.stdin)['evaluation']['median_ms'])")
  $ sqlite3 kloop.db "SELECT abs(median_ms - $B) < 1e-9 FROM evaluations WHERE stage = 'full' AND verdict = 'ok' AND json_extract(extra_json, '$.crowned') = 1 ORDER BY id DESC LIMIT 1"
  1

A screened evaluation faster than every full one is still no best, in `best`, `show`
and `runs`:

  $ "$KLOOP" -e 'local s = require("kloop.store.db") local db = assert(s.open(os.getenv("KLOOP_DB")))
  > local run = db:candidates(1) local c = run[#run]
  > assert(db:add_evaluation(c.id, { verdict = "ok", stage = "screened", time_ms = 1e-6, reason = "screened" })) db:close()'
  $ kloop best --json | python3 -c "import json,sys; e=json.load(sys.stdin)['evaluation']; print(e['stage'], e['median_ms'] > 1e-6)"
  full True
  $ kloop runs --json | python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print(r['best_ms'] > 1e-6)"
  True

`runs` counts as verified (n_ok) only candidates the full protocol verified:

  $ N=$(sqlite3 kloop.db "SELECT count(DISTINCT candidate_id) FROM evaluations WHERE verdict = 'ok' AND stage = 'full'")
  $ kloop runs --json | python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print(r['n_ok'] == $N, r['n_ok'] < r['n_evaluated'])"
  True True

With --cascade off the run is as it was: every candidate fully evaluated, no stage on
the progress lines, the same points for the same seed:

  $ kloop "$TUNE" "$T" --budget 12 --seed 4 --timing-budget 0.05 --method random --cascade off > off.txt; echo "exit $?"
  exit 0
  $ grep -c '\[\(screened\|full\)\]' off.txt; grep -c '^stages' off.txt
  0
  0
  [1]
  $ grep '^\[' on.txt | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*' > a.txt; wc -l < a.txt
  12
  $ grep '^\[' off.txt | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*' | cmp - a.txt && echo same
  same
  $ sqlite3 kloop.db "SELECT count(*), sum(e.stage = 'full') FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = 2"
  13|13
  $ sqlite3 kloop.db "SELECT e.reps >= 5 FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = 2 GROUP BY 1"
  1

Bad values are usage errors:

  $ kloop "$TUNE" "$T" --cascade maybe; echo "exit $?"
  kloop: --cascade maybe: give on or off
  exit 2

Exporting a screened candidate says that it is one:

  $ C=$(sqlite3 kloop.db "SELECT e.candidate_id FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = 1 AND e.stage = 'screened' AND e.median_ms > 1e-6 ORDER BY e.id LIMIT 1")
  $ kloop export "c:$C" -o ex --force > /dev/null; grep -c '^// screened only' ex/*.c; python3 -c "import json; print(json.load(open('ex/provenance.json'))['evaluation']['stage'])"
  1
  screened

After the baseline both stages go in one request: the worker screens, and promotes a
screen within the bound itself; the full stage does not verify the screen's size and
input set again, and counts the screen's three timed repetitions among its own. With a
wide margin every candidate is promoted:

  $ KLOOP_DB=$PWD/wide.db kloop "$TUNE" "$T" --budget 4 --seed 4 --timing-budget 0.05 --method random --cascade on --cascade-margin 100 > wide.txt; echo "exit $?"
  exit 0
  $ grep -o '^stages: .*' wide.txt
  stages: full 5, screened only 0
  $ sqlite3 wide.db "SELECT stage, count(*), sum(reason LIKE '%(the first 3 the screen''s)'), sum(json_extract(extra_json, '$.screen.reps') = 3), min(reps) >= 5 FROM evaluations GROUP BY stage"
  full|5|4|5|1
