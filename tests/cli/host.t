The host backend: C kernels checked on the CPU with the same protocol, no GPU needed.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache
  $ cd "$KLOOP_SRC"

  $ kloop check examples/cpu/sgemm.c --json > $CRAMTMP/r.json; echo "exit $?"
  exit 0
  $ python3 -c "import json; r = json.load(open('$CRAMTMP/r.json')); print(r['verdict'], r['time_ms'] > 0, len(r['samples']) == r['reps'], r['ci_ms'][0] <= r['time_ms'] <= r['ci_ms'][1], r['sandbox'])"
  ok True True True seccomp allow-list + rlimits + Landlock (file reads confined to the compile cache and system libraries)
  $ kloop check examples/cpu/saxpy.c | head -2
  candidate  saxpy.c
  verdict    ok

compile works on .c targets as on .cu ones:

  $ kloop compile examples/cpu/sgemm.c | sed 's/[0-9.]* s[,)].*/T s)/'
  sgemm.c: ok (host, T s)

A wrong candidate gets its verdict and exit 3:

  $ printf 'void sgemm(int M, int N, int K, const float *A, const float *B, float *C) { for (int i = 0; i < M * N; ++i) C[i] = 1.0f; }\n' > $CRAMTMP/ones.c
  $ kloop check examples/cpu/sgemm.c --candidate $CRAMTMP/ones.c | sed -n 2p; echo "exit ${PIPESTATUS[0]}"
  verdict    wrong
  exit 3

`kloop replay` re-times a stored candidate: exit 0 when the verdict is the same and the
new median lies inside the stored CI, 1 when the time moved outside it (and it says by
how much), 3 when the verdict changed:

  $ export KLOOP_DB=$CRAMTMP/replay.db
  $ kloop tune examples/cpu/sgemm_blocked.c --budget 1 --timing-budget 0.05 --promote off --quiet > /dev/null; echo "exit $?"
  exit 0
  $ sqlite3 $KLOOP_DB "UPDATE evaluations SET ci_lo_ms = 0, ci_hi_ms = 1e9 WHERE candidate_id = 1"
  $ kloop replay 1 --budget 0.05 | tail -1; echo "exit ${PIPESTATUS[0]}"
  time now / stored = * (glob)
  exit 0
  $ sqlite3 $KLOOP_DB "UPDATE evaluations SET median_ms = median_ms / 1000, ci_lo_ms = median_ms / 1001, ci_hi_ms = median_ms / 999 WHERE candidate_id = 1"
  $ kloop replay 1 --budget 0.05 | tail -1; echo "exit ${PIPESTATUS[0]}"
  time moved: *x the stored median, outside the stored CI [*, *] (glob)
  exit 1
  $ kloop replay 1 --budget 0.05 --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['same_verdict'], r['time_moved'], r['time_ratio'] > 100)"
  True True True
  $ sqlite3 $KLOOP_DB "UPDATE evaluations SET verdict = 'wrong' WHERE candidate_id = 1"
  $ kloop replay 1 --budget 0.05 | grep -c '^verdict changed'; echo "exit ${PIPESTATUS[0]}"
  1
  exit 3
