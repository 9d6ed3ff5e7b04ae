Strategy packages (issue 19, docs/SCRIPTING.md "Sharing strategies"): a strategy is a
folder with its modules beside it, found by path or bare name, listed by `kloop
strategies`, checked against the api it requires, and every file it loads is stored
with the run, so a changed one stops --resume and `kloop strategy-files` gives back the
exact code. On a host task (no GPU, no LLM).

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ T="$KLOOP_SRC/examples/cpu/sgemm_blocked.c"
  $ pts() { grep '^\[' | grep -o 'TI=[0-9]* TJ=[0-9]* TK=[0-9]*'; }
  $ cp -r "$KLOOP_SRC/examples/strategies/hillclimb" . && cp hillclimb/moves.lua moves.orig
  $ ls hillclimb
  init.lua
  moves.lua

The example package (init.lua requires its moves.lua) by its folder's path; its first
step is chosen by the seed alone:

  $ kloop ./hillclimb "$T" --budget 3 --seed 3 --timing-budget 0.02 | pts | tee path.txt
  TI=64 TJ=32 TK=32
  TI=32 TJ=32 TK=32
  TI=64 TJ=32 TK=16

By its init.lua from another working directory, and by bare name through KLOOP_PATH:

  $ mkdir elsewhere && cd elsewhere
  $ kloop ../hillclimb/init.lua "$T" --budget 3 --seed 3 --timing-budget 0.02 --no-store | pts | cmp - ../path.txt && echo same
  same
  $ KLOOP_PATH=/nonexistent:"$KLOOP_SRC/examples/strategies" kloop hillclimb "$T" --budget 3 --seed 3 --timing-budget 0.02 --no-store | pts | cmp - ../path.txt && echo same
  same
  $ cd ..

The run stored every file it loaded from outside kloop, with its hash and text:

  $ sqlite3 kloop.db "SELECT role, module, path, length(hash) FROM run_files WHERE run_id = 1 ORDER BY role, module"
  entry|init.lua|./hillclimb/init.lua|32
  module|moves|./hillclimb/moves.lua|32
  $ sqlite3 kloop.db "SELECT text FROM run_files WHERE run_id = 1 AND module = 'moves'" | head -c -1 | cmp - moves.orig && echo same text
  same text

`kloop strategies` lists what a bare name finds, in lookup order; a duplicate name
in a later folder is marked shadowed:

  $ mkdir -p team1 team2 && cp -r hillclimb team1/ && cp -r hillclimb team2/
  $ printf -- '-- team2/solo.lua: a one-file strategy\nreturn { requires = { api = ">=1,<3" }, propose = function() end }\n' > team2/solo.lua
  $ printf 'return { tag = 1 }\n' > team2/helper.lua
  $ KLOOP_PATH=$PWD/team1:$PWD/team2 kloop strategies | grep -E '^(NAME|hillclimb|solo|tune|\()' | tr -s ' ' | sed "s#$PWD#.#g; s#$KLOOP_SRC#SRC#g"
  NAME API FROM PATH DESCRIPTION
  hillclimb 1 KLOOP_PATH ./team1/hillclimb/init.lua climb from a random point to the best of its unseen neighbours
  hillclimb (shadowed) 1 KLOOP_PATH ./team2/hillclimb/init.lua climb from a random point to the best of its unseen neighbours
  solo >=1,<3 KLOOP_PATH ./team2/solo.lua a one-file strategy
  tune 1 built-in SRC/strategies/tune.lua search the task's tunable parameters (-D defines); no network
  (shadowed): a folder earlier in the lookup has the same name; `kloop NAME` runs that one
  (1 Lua file without a propose hook not listed: modules, not strategies)
  $ KLOOP_PATH=$PWD/team1:$PWD/team2 kloop strategies --json | grep -o '"name":"hillclimb","path":"[^"]*","shadowed_by":"[^"]*"' | sed 's#\\/#/#g' | sed "s#$PWD#.#g"
  "name":"hillclimb","path":"./team2/hillclimb/init.lua","shadowed_by":"./team1/hillclimb/init.lua"
  $ KLOOP_PATH=$PWD/team1:$PWD/team2 kloop solo "$T" --budget 1 --no-store --timing-budget 0.02 --quiet | grep -c '^run done'
  1

A strategy that needs another api is refused before any hook runs, naming both versions:

  $ cp -r hillclimb future && sed -i 's/requires = { api = 1 }/requires = { api = 2 }/; s/^function S.init(ctx)$/&\n  print("init ran")/' future/init.lua
  $ kloop future "$T" --budget 1 --timing-budget 0.02; echo "exit $?"
  kloop: future/init.lua needs kloop api 2; this kloop has api 1
  exit 1
  $ sed -i 's/requires = { api = 2 }/requires = { api = { min = 1, max = "two" } }/' future/init.lua
  $ kloop future "$T" --budget 1 --timing-budget 0.02; echo "exit $?"
  kloop: future/init.lua: requires.api: give { min = N, max = M } with numbers
  exit 1
  $ sqlite3 kloop.db "SELECT count(*) FROM runs"
  1

A module required late (in the done hook) is stored too:

  $ mkdir lazy && printf 'return { propose = function() end, done = function() print(require("late").word) end }\n' > lazy/init.lua
  $ printf 'return { word = "late module loaded" }\n' > lazy/late.lua
  $ kloop lazy "$T" --budget 1 --timing-budget 0.02 | grep late
  late module loaded
  $ sqlite3 kloop.db "SELECT role, module FROM run_files WHERE run_id = 2 ORDER BY role, module"
  entry|init.lua
  module|late

A changed sibling module stops --resume (exit 1), naming the file and both hashes;
--force resumes and the run records it:

  $ echo "-- changed" >> hillclimb/moves.lua
  $ kloop ./hillclimb "$T" --resume 1 --timing-budget 0.02 2>&1 >/dev/null | sed -E 's/[0-9a-f]{32}/HASH/g'; echo "exit ${PIPESTATUS[0]}"
  kloop: store: run 1's strategy files changed since it ran: moves (./hillclimb/moves.lua) was HASH, now HASH; resuming would mix code (give --force to resume anyway: it is recorded in the run; kloop strategy-files 1 -o DIR has the old files)
  exit 1
  $ kloop ./hillclimb "$T" --resume 1 --timing-budget 0.02 --force --quiet 2>&1 | grep -E 'changed|^run'
  kloop: resuming run 1 with changed strategy files (--force, recorded in the run)
  run done (budget: candidates) on sgemm_blocked_cpu: 3 candidates in * (glob)
  $ sqlite3 kloop.db "SELECT json_extract(options_json, '$.forced_resumes[0].changed[0].module') FROM runs WHERE id = 1"
  moves
  $ kloop show 1 | grep -o '"forced_resumes":\[{"at":"[^"]*","changed":\[{"module":"moves"'| sed 's/"at":"[^"]*"/"at":"T"/'
  "forced_resumes":[{"at":"T","changed":[{"module":"moves"

`kloop strategy-files` writes the files run 1 ran (the moves.lua of then, not the
changed one) and the command that reruns them; the rerun proposes the same points:

  $ kloop strategy-files 1 -o exported | sed -E "s/[0-9a-f]{32}/HASH/; s#$T#TASK#"
  entry   exported/init.lua  HASH  (was ./hillclimb/init.lua)
  module  exported/moves.lua  HASH  (was ./hillclimb/moves.lua)
  rerun: kloop exported TASK --seed 3 --batch 2 --budget 3 --timing-budget 0.02
  $ cmp exported/moves.lua moves.orig && echo the old moves.lua
  the old moves.lua
  $ cmd=$(kloop strategy-files 1 -o exported --force | sed -n 's/^rerun: //p')
  $ mkdir -p again && cp -r exported again/ && cd again && eval "$cmd" --no-store | pts | cmp - ../path.txt && echo same points
  same points
  $ cd ..
  $ kloop strategy-files 1 -o exported; echo "exit $?"
  kloop strategy-files: exported/init.lua exists (give --force to overwrite)
  exit 1
  $ kloop strategy-files c:1 -o x; echo "exit $?"
  kloop strategy-files: give a run, not a candidate
  usage: kloop strategy-files RUN -o DIR [--force] [--db PATH] [--json]
  
  Writes into DIR the Lua files run RUN's strategy loaded from outside kloop (the entry
  file and every module it required, in their layout), as stored when they ran, and prints
  the command that reruns them with the run's seed and options. A file already in DIR is
  not overwritten unless --force.
  
  common options:
    --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
    --json        one JSON document on stdout, for scripts
  Exit: 0 ok, 1 error (unknown id, missing or unreadable database), 2 bad usage.
  exit 2
