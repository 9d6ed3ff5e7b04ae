Reading the store never writes it: runs, show, best, diff and export open it
read-only, work in a read-only folder, refuse an empty or foreign file and leave it
as it was, and print valid UTF-8 JSON whatever bytes the store holds.

  $ kloop() { "$KLOOP" "$@"; }
  $ top=$PWD
  $ kloop "$KLOOP_SRC/tests/store/fixture.lua" fx.db
  runs 1, 2

A file's fingerprint (size, modification time to the nanosecond, content hash):

  $ fp() { stat -c '%s %y' "$1"; md5sum < "$1"; }

ro DIR CMD...: runs CMD in DIR while DIR cannot be written. As root, permissions do
not stop writes, so it is a read-only bind mount in a private mount namespace
(unshare -m); where that is not allowed, the folder is made immutable (chattr +i);
as another user, chmod 555.

  $ ro() {
  >   local d; d=$(cd "$1" && pwd); shift
  >   if [ "$(id -u)" != 0 ]; then
  >     chmod 555 "$d"; (cd "$d" && "$@"); local rc=$?; chmod 755 "$d"; return $rc
  >   elif unshare -m true 2>/dev/null; then
  >     unshare -m sh -c 'd=$1; shift; mount --bind "$d" "$d" && mount -o remount,ro,bind "$d" && cd "$d" && exec "$@"' sh "$d" "$@"
  >   else
  >     chattr +i "$d" || return 99; (cd "$d" && "$@"); local rc=$?; chattr -i "$d"; return $rc
  >   fi
  > }
  $ mkdir ro && cp fx.db ro/ && before=$(fp ro/fx.db)
  $ ro ro sh -c 'touch probe 2>/dev/null && echo writable || echo read-only'
  read-only

Every read command works there (the store is in WAL mode, and SQLite cannot create
its -shm file in this folder, so kloop reads it with immutable=1):

  $ ro ro "$KLOOP" runs --db fx.db
  ID  TASK   STRATEGY  STATUS  CANDIDATES (EVAL/OK)  BEST       SPEEDUP  STARTED (UTC)
  1   sgemm  beam.lua  done    4 (4/3)               800.00 us  5.00x    2026-01-02 10:00:00
  2   sgemm  tune.lua  stale   2 (1/1)               4.100 ms   1.00x    2026-01-03 08:00:00
  $ ro ro "$KLOOP" show 1 --db fx.db | head -2
  run 1: sgemm (kernels/gemm.cu)
  status     done: budget exhausted
  $ ro ro "$KLOOP" show c:3 --db fx.db --json | "$KLOOP" -e 'print(require("cjson").decode(io.read("*a")).evaluation.verdict)'
  wrong
  $ ro ro "$KLOOP" best --db fx.db | head -1
  c:4  run 1  sgemm  llm  800.00 us  5.00x the baseline
  $ ro ro "$KLOOP" diff 2 3 --db fx.db | head -2
  --- c:2 (run 1, tune, BM=16,BN=64)
  +++ c:3 (run 1, llm, BM=16,BN=64)
  $ ro ro "$KLOOP" export 4 -o "$top/exported" --db fx.db --force
  c:4 -> /*/exported/kernel.cu, /*/exported/launch_plan.h, /*/exported/provenance.json (glob)
  $ ls ro; [ "$(fp ro/fx.db)" = "$before" ] && echo untouched
  fx.db
  untouched

A write-ahead log left by a killed writer cannot be read without its -shm file in a
read-only folder; kloop says so:

  $ mkdir walro && cp fx.db walro/ && "$KLOOP" -e '
  > local db = assert(require("kloop.store.db").open("walro/fx.db"))
  > assert(db:exec("PRAGMA wal_autocheckpoint = 0"))
  > assert(db:write("UPDATE runs SET task_name = ? WHERE id = 1", "only-in-the-wal"))
  > os.exit(0)' && rm walro/fx.db-shm && ls walro
  fx.db
  fx.db-wal
  $ ro walro "$KLOOP" runs --db fx.db 2>&1 | sed 's/-wal, [0-9]* bytes/-wal, N bytes/' | head -2
  kloop runs: warning: fx.db: read without its write-ahead log (fx.db-wal, N bytes: this folder is read-only), so the newest changes may be missing
  ID  TASK   STRATEGY  STATUS  CANDIDATES (EVAL/OK)  BEST       SPEEDUP  STARTED (UTC)
  $ kloop runs --db walro/fx.db | sed -n 2p | cut -c1-19
  1   only-in-the-wal

In a writable folder the read commands never write either: the database file keeps
its bytes and its time.

  $ before=$(fp fx.db) && kloop runs > /dev/null --db fx.db && kloop show c:4 --db fx.db > /dev/null && [ "$(fp fx.db)" = "$before" ] && echo untouched
  untouched

An empty file, a text file and another program's SQLite file are refused, named,
and left exactly as they were (no schema written, no -wal or -shm beside them):

  $ mkdir other && cd other
  $ : > empty.db && printf 'just some text\n' > notes.txt
  $ "$KLOOP" -e '
  > local core = require("kloop.core.ffi")
  > local function make(path, sql)
  >   local out = core.ffi.new("kl_db*[1]")
  >   assert(core.try(core.C.kl_db_open, path, 0, out))
  >   assert(core.try(core.C.kl_db_exec, out[0], sql))
  >   core.C.kl_db_close(out[0])
  > end
  > make("app.db", "PRAGMA journal_mode = DELETE; CREATE TABLE people (name TEXT); INSERT INTO people VALUES (1);")
  > make("app1.db", "PRAGMA journal_mode = DELETE; CREATE TABLE runs (x); PRAGMA user_version = 1;")'
  $ for f in empty.db notes.txt app.db app1.db; do fp $f > $f.fp; done
  $ kloop runs --db empty.db; echo "exit $?"
  kloop runs: empty.db: an empty file, not a kloop store (kloop creates a store when a run starts; give --db the path of one)
  exit 1
  $ kloop show 1 --db notes.txt; echo "exit $?"
  kloop show: notes.txt: not a SQLite database (file is not a database)
  exit 1
  $ kloop best --db app.db; echo "exit $?"
  kloop best: app.db: not a kloop database (it has tables but schema version 0)
  exit 1
  $ kloop runs --db app1.db --json; echo "exit $?"
  kloop runs: app1.db: not a kloop database (schema version 1, but no 'candidates' table)
  exit 1
  $ kloop runs --db .; echo "exit $?"
  kloop runs: .: is a folder, not a kloop store
  exit 1

A run's writer refuses another program's file too, before it changes anything:

  $ kloop "$KLOOP_SRC/tests/store/fixture.lua" app.db 2>&1 | grep -o 'app.db: not a kloop database.*'
  app.db: not a kloop database (it has tables but schema version 0)
  $ for f in empty.db notes.txt app.db app1.db; do [ "$(fp $f)" = "$(cat $f.fp)" ] && echo "$f untouched"; done
  empty.db untouched
  notes.txt untouched
  app.db untouched
  app1.db untouched
  $ ls
  app.db
  app.db.fp
  app1.db
  app1.db.fp
  empty.db
  empty.db.fp
  notes.txt
  notes.txt.fp
  $ cd ..

JSON output is valid UTF-8 even where the store holds other bytes (a model's reply
in Latin-1, a cut-off multi-byte character): each byte of an invalid sequence
becomes the character U+0080..U+00FF of the same number.

  $ "$KLOOP" -e '
  > local store = require("kloop.store.db")
  > local db = assert(store.open("bytes.db"))
  > local run = assert(db:begin_run { strategy_path = "s.lua", strategy_text = "", task_name = "caf\233", seed = 1 })
  > local c = assert(db:add_candidate(run, { source = "// \255\254 reply\n// euro \226\130\172 ok, cut \226\130", proposer = "llm",
  >   note = "na\239ve" }))
  > assert(db:add_evaluation(c, { verdict = "compile_error", reason = "bad byte \200 here", compile_log = "log \192\175" }))
  > assert(db:end_run(run, "done", "x"))
  > db:close()'
  $ utf8() { python3 -c 'import sys, json; d = json.loads(sys.stdin.buffer.read().decode("utf-8", "strict")); print(ascii(eval("d" + sys.argv[1])))' "$1"; }
  $ kloop show c:1 --db bytes.db --json | utf8 '["source"]'
  '// \xff\xfe reply\n// euro \u20ac ok, cut \xe2\x82'
  $ kloop show c:1 --db bytes.db --json | utf8 '["note"]'
  'na\xefve'
  $ kloop show c:1 --db bytes.db --json | utf8 '["evaluation"]["compile_log"]'
  'log \xc0\xaf'
  $ kloop show 1 --db bytes.db --json | utf8 '["task_name"]'
  'caf\xe9'
  $ kloop runs --db bytes.db --json | utf8 '[0]["task_name"]'
  'caf\xe9'
  $ kloop best --db bytes.db --json; echo "exit $?"
  kloop best: no verified candidate in the store
  exit 1
  $ kloop diff 1 1 --db bytes.db --json | utf8 '["removed"]'
  0
  $ kloop export 1 -o exp2 --db bytes.db --force > /dev/null && utf8 '["evaluation"]["reason"]' < exp2/provenance.json
  'bad byte \xc8 here'
