The run store commands: runs, show, best, diff, export, replay, on a fixture store
written through the Lua API (fake but complete rows; no GPU needed).

  $ kloop() { "$KLOOP" "$@"; }
  $ kloop "$KLOOP_SRC/tests/store/fixture.lua" fx.db
  runs 1, 2
  $ export KLOOP_DB=$PWD/fx.db

runs: one line per run; run 2 is still marked running but its writer is gone:

  $ kloop runs
  ID  TASK   STRATEGY  STATUS  CANDIDATES (EVAL/OK)  BEST       SPEEDUP  STARTED (UTC)
  1   sgemm  beam.lua  done    4 (4/3)               800.00 us  5.00x    2026-01-02 10:00:00
  2   sgemm  tune.lua  stale   2 (1/1)               4.100 ms   1.00x    2026-01-03 08:00:00
  $ kloop runs --json | "$KLOOP" -e 'local r = require("cjson").decode(io.read("*a")) print(#r, r[1].speedup, r[2].status)'
  2\t5\tstale (esc)

show RUN, show c:ID (or --candidate ID):

  $ kloop show 1
  run 1: sgemm (kernels/gemm.cu)
  status     done: budget exhausted
  started    2026-01-02 10:00:00  ended 2026-01-02 10:04:00
  strategy   strategies/beam.lua  hash 6c281bcd8ec20fb0b1480bfae522faef
  machine    gpu-box-1 (pid 4242)
  gpu        NVIDIA H200 sm_90
  versions   kloop 0.1.0, driver 13.0, CUDA 13.0, NVRTC 13.0
  seed       42
  options    {"beam":4,"llm":{"model":"claude-x"}}
  budget     {"candidates":4,"seconds":600}
  candidates 4, 4 evaluated, 3 ok
  best       c:4 800.00 us (5.00x the baseline)
  
  CANDIDATE  PROPOSER  PARENTS  PARAMS       VERDICT  MEDIAN     SPEEDUP
  c:1        baseline  -        -            ok       4.000 ms   1.00x
  c:2        tune      c:1      BM=16,BN=64  ok       1.250 ms   3.20x
  c:3        llm       c:2      BM=16,BN=64  wrong    -          -
  c:4        llm       c:2,c:1  BM=16,BN=64  ok       800.00 us  5.00x
  $ kloop show c:3
  candidate 3 (run 1, sgemm)
  proposer   llm, model claude-x, prompt rewrite@9f2c01ab, seed 1234
  sampling   {"max_tokens":4096,"temperature":0.7}
  tokens     1800 in, 650 out, $0.0123
  params     BM=16,BN=64
  source     14 lines, hash d49dc0d0177fcccaefd8dd3d488fd051
  created    2026-01-02 10:02:00
  promotion  not promoted
  lineage (the candidate, then its ancestors by generation):
    GEN  CANDIDATE  PROPOSER  MODEL     VERDICT  MEDIAN    PARENTS
    0    c:3        llm       claude-x  wrong    -         c:2
    1    c:2        tune      -         ok       1.250 ms  c:1
    2    c:1        baseline  -         ok       4.000 ms  (root)
  evaluation:
    verdict    wrong: check1 set 1: C[0] = -3.5 but the reference has 3.5
    evidence   {"arg":"C","case":"check1","count":98431,"index":0,"out":-3.5,"ref":3.5,"rel_err":2,"set":1}
    gpu        NVIDIA H200 sm_90
    evaluated  2026-01-02 10:02:04
  $ kloop show --candidate 4 --json | "$KLOOP" -e 'local c = require("cjson").decode(io.read("*a")) print(c.model, c.llm_seed, #c.lineage, c.evaluation.verdict)'
  claude-x\t1235\t3\tok (esc)
  $ kloop show r:2 | grep -E '^(status|c:6)'
  status     stale
  c:6        tune      c:5      BM=32,BN=32  (not evaluated)  -         -

best, over the store or in one run:

  $ kloop best | head -1
  c:4  run 1  sgemm  llm  800.00 us  5.00x the baseline
  $ kloop best 2 --json | "$KLOOP" -e 'local c = require("cjson").decode(io.read("*a")) print(c.id, c.proposer, c.evaluation.median_ms)'
  5\tbaseline\t4.1 (esc)

diff of two candidates' sources:

  $ kloop diff 2 3
  --- c:2 (run 1, tune, BM=16,BN=64)
  +++ c:3 (run 1, llm, BM=16,BN=64)
  @@ -9,6 +9,6 @@
     int i = blockIdx.y * BM + threadIdx.y, j = blockIdx.x * BN + threadIdx.x;
     if (i >= M || j >= N) return;
     float acc = 0.f;
  -  for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
  +  for (int k = 0; k < K; ++k) acc -= A[i * K + k] * B[k * N + j];
     C[i * N + j] = acc;
   }
  $ kloop diff c:2 c:2
  c:2 and c:2 have the same source

export writes the kernel with provenance (parameters as #defines), a C header with the
plan, and provenance.json; from the source tree the plan comes from the task when none
was recorded:

  $ kloop export 4 -o out; echo "exit $?"
  kloop export: c:4 is not promoted: run `kloop promote 4` first, or give --force to export it anyway (the files then say so)
  exit 1
  $ kloop export 4 -o out --force
  c:4 -> out/kernel.cu, out/launch_plan.h, out/provenance.json
  $ ls out
  kernel.cu
  launch_plan.h
  provenance.json
  $ head -5 out/kernel.cu
  // kloop export: candidate 4 of run 1, task sgemm (kernels/gemm.cu)
  // proposed by llm, model claude-x, prompt rewrite@9f2c01ab, seed 1235
  // parents c:2, c:1
  // verdict ok, median 800.00 us (95% CI 792.00 us .. 808.00 us), 5.00x the baseline, on NVIDIA H200 sm_90
  // exported WITHOUT promotion (--force): not promoted
  $ grep -A2 'plan\[\]' out/launch_plan.h
  static const kloop_c4_launch kloop_c4_plan[] = {
    { "gemm", { 64, 256, 1 }, { 64, 16, 1 }, 0 },
  };
  $ cc -fsyntax-only -x c out/launch_plan.h && c++ -fsyntax-only -x c++ out/launch_plan.h && echo compiles
  compiles
  $ sed -n '6,9p' out/kernel.cu
  // source hash 264040cad8bebddfb662196dbe96c366, kloop 0.1.0, strategy strategies/beam.lua; full provenance in provenance.json
  // the candidate's parameters (it was compiled with -D for each)
  #ifndef BM
  #define BM 16
  $ cd "$KLOOP_SRC" && kloop export 2 -o "$OLDPWD/out2" --force > /dev/null; cd "$OLDPWD"
  $ grep -E '^(/\*|#define KLOOP|  \{)' out2/launch_plan.h
  /* launch_plan.h: launch plan of kloop candidate 2 (task sgemm) at the task's bench size. */
  #define KLOOP_C2_LAUNCH_PLAN_H
  /* bench size */
  #define KLOOP_C2_K 4096
  #define KLOOP_C2_M 4096
  #define KLOOP_C2_N 4096
  /* from the candidate's launch comments; kernels run in this order */
    { "gemm", { 64, 256, 1 }, { 64, 16, 1 }, 0 },
  /* as JSON: [{"block":[64,16,1],"entry":"gemm","grid":[64,256,1],"smem":0}] */
  $ "$KLOOP" -e 'local p = require("cjson").decode(io.open("out/provenance.json"):read("*a")) print(p.candidate, p.model, p.prompt_hash, p.gpu_name, p.evaluation.verdict, #p.lineage, p.bench_plan[1].grid[2])'
  4\tclaude-x\t9f2c01ab\tNVIDIA H200\tok\t3\t256 (esc)

replay needs the task and a GPU; without either it says so and exits 1:

  $ kloop replay 4; echo "exit $?"
  kloop replay: kernels/gemm.cu: no task sidecar (expected kernels/gemm.lua next to the kernel; see docs/TASKS.md) (run it from the folder the run started in, or give --task PATH)
  exit 1
  $ cd "$KLOOP_SRC" && kloop replay 4 2>&1 | sed 's/(no NVIDIA driver.*);/(DRIVER);/'; cd "$OLDPWD"
  kloop replay: no GPU here (DRIVER); the stored evaluation is in `kloop show c:4`

Bad input: a clear message and a non-zero exit, never a traceback:

  $ kloop runs --db missing.db; echo "exit $?"
  kloop runs: no database at missing.db (give --db PATH or set KLOOP_DB)
  exit 1
  $ printf 'not a database at all, just text\n' > junk.db
  $ kloop runs --db junk.db; echo "exit $?"
  kloop runs: junk.db: not a SQLite database (file is not a database)
  exit 1
  $ kloop show 99; echo "exit $?"
  kloop show: no run 99
  exit 1
  $ kloop show c:99; echo "exit $?"
  kloop show: no candidate 99
  exit 1
  $ kloop diff 1 99; echo "exit $?"
  kloop diff: no candidate 99
  exit 1
  $ kloop best 99; echo "exit $?"
  kloop best: no run 99
  exit 1
  $ kloop export 4; echo "exit $?"
  kloop export: give the output folder with -o DIR
  usage: kloop export CANDIDATE -o DIR [--force] [--db PATH] [--json]
  
  Writes into DIR: kernel.cu (or .c) with a provenance header (and the candidate's
  parameters as #defines), launch_plan.h (the launch plan at the task's bench size
  as C constants, and the plan as JSON), and provenance.json, both with the
  promotion's evidence. Only a promoted candidate is exported (kloop promote ID,
  docs/PROMOTION.md); --force exports another, and says so in both files.
  
  common options:
    --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
    --json        one JSON document on stdout, for scripts
  Exit: 0 ok, 1 error (unknown id, missing or unreadable database), 2 bad usage.
  exit 2
  $ kloop show x:1 2>&1 | head -1; kloop show x:1 2>/dev/null; echo "exit $?"
  kloop show: 'x:1' is not an id (use N, c:N for a candidate or r:N for a run)
  exit 2
  $ cp fx.db newer.db && "$KLOOP" -e 'local s = require("kloop.store.db") local db = assert(s.open("newer.db")) assert(db:exec("PRAGMA user_version = 9")) db:close()'
  $ kloop runs --db newer.db; echo "exit $?"
  kloop runs: newer.db: schema version 9 is newer than this kloop understands (it knows up to 7); use a newer kloop
  exit 1
