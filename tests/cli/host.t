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
