kloop compile shows a candidate's own launch plan (its `// kloop: launch` comments)
at each of the task's sizes, or why it is refused. The comments are read by kloop's
own parser, never run, so a hostile one costs nothing (no GPU needed).

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache
  $ cd "$KLOOP_SRC"
  $ T() { sed 's/ [0-9.]* s)/ T s)/; s/ [0-9.]* s, cached)/ T s)/'; }

A candidate with two kernels in sequence, sized from the task's sizes and a #define:

  $ cat > $CRAMTMP/two.cu <<'CU'
  > #define TILE 16
  > // kloop: launch grid = {cdiv(N, TILE), cdiv(M, TILE)}, block = {TILE, TILE}
  > // kloop: launch entry = "fixup", grid = {max(1, cdiv(M * N, 1024))}, block = {256}, smem = 4 * 256
  > extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
  > extern "C" __global__ void fixup(int M, int N, int K, const float *A, const float *B, float *C) {}
  > CU
  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/two.cu | T
  two.cu: ok (sm_90, T s)
    fixup: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)
    gemm: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)
  launch plan (from the kernel's launch comments):
    check1 (K=129 M=257 N=383): gemm grid = {24, 17, 1}, block = {16, 16, 1}, smem = 0
                                fixup grid = {97, 1, 1}, block = {256, 1, 1}, smem = 1024
    check2 (K=64 M=1000 N=1024): gemm grid = {64, 63, 1}, block = {16, 16, 1}, smem = 0
                                 fixup grid = {1000, 1, 1}, block = {256, 1, 1}, smem = 1024
    check3 (K=3 M=1 N=7): gemm grid = {1, 1, 1}, block = {16, 16, 1}, smem = 0
                          fixup grid = {1, 1, 1}, block = {256, 1, 1}, smem = 1024
    bench (K=4096 M=4096 N=4096): gemm grid = {256, 256, 1}, block = {16, 16, 1}, smem = 0
                                  fixup grid = {16384, 1, 1}, block = {256, 1, 1}, smem = 1024

-D parameters (--params) override the source's #defines; --json has the same plan:

  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/two.cu --params TILE=32 --json > $CRAMTMP/two.json
  $ python3 -c "import json; r = json.load(open('$CRAMTMP/two.json')); l = r['launch']; print(r['verdict'], l['source'], [c['label'] for c in l['cases']]); print(json.dumps(l['cases'][3]['kernels'][0], sort_keys=True))"
  ok launch comments ['check1', 'check2', 'check3', 'bench']
  {"block": [32, 32, 1], "entry": "gemm", "grid": [128, 128, 1], "smem": 0}

Without launch comments the task's launch function applies (shown in --json only):

  $ kloop compile kernels/gemm.cu --json | python3 -c "import json, sys; l = json.load(sys.stdin)['launch']; print(l['source'], l['cases'][3]['kernels'][0]['grid'])"
  task [128, 128, 1]

`/` is exact division: a block that is not a whole number at some size is refused
there, with the reason; the verdict is launch_error and the exit 3:

  $ cat > $CRAMTMP/frac.cu <<'CU'
  > // kloop: launch grid = {cdiv(N, 32)}, block = {K / 3}
  > extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
  > CU
  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/frac.cu | T; echo "exit ${PIPESTATUS[0]}"
  frac.cu: launch_error (sm_90, T s)
    gemm: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)
  launch plan (from the kernel's launch comments):
    check1 (K=129 M=257 N=383): gemm grid = {12, 1, 1}, block = {43, 1, 1}, smem = 0
    check2 (K=64 M=1000 N=1024): refused: block[1] = 21.333333333333 is not a positive integer
    check3 (K=3 M=1 N=7): gemm grid = {1, 1, 1}, block = {1, 1, 1}, smem = 0
    bench (K=4096 M=4096 N=4096): refused: block[1] = 1365.3333333333 is not a positive integer
  exit 3

A hostile comment (Lua that would build a 1 GB string) is refused at once, naming
the comment, its line and the column:

  $ cat > $CRAMTMP/hostile.cu <<'CU'
  > // a model wrote this
  > // kloop: launch grid = {cdiv(N, 16)}, block = {16}
  > // kloop: launch grid = {#(("x"):rep(1e9))}, block = {1}
  > extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}
  > CU
  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/hostile.cu | T; echo "exit ${PIPESTATUS[0]}"
  hostile.cu: launch_error (sm_90, T s)
    gemm: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)
  launch plan (from the kernel's launch comments):
    every size: refused: launch comment 2 (line 3): unexpected '#' at column 26
  exit 3
  $ printf '// kloop: launch grid = {os.exit(1)}, block = {while_true}\nextern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}\n' > $CRAMTMP/os.cu
  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/os.cu | tail -1
    every size: refused: launch comment 1 (line 1): unknown name 'os' at column 26 (no modules here: use cdiv, min, max, floor, ceil)
  $ printf '// kloop: launch grid = {foo}, block = {1}\nextern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) {}\n' > $CRAMTMP/foo.cu
  $ kloop compile kernels/gemm.cu --candidate $CRAMTMP/foo.cu | tail -1
    every size: refused: launch comment 1 (line 1): unknown name 'foo' at column 26 (names: K, M, N)

A compile cache folder that cannot be made is kloop's failure, said with the fix (exit
1), not a verdict on the kernel (a full disk: cache_full.t):

  $ touch $CRAMTMP/file
  $ KLOOP_CACHE=$CRAMTMP/file/cache kloop compile kernels/saxpy.lua
  kloop compile: kloop's compile cache */file/cache/cubin cannot keep the binary (Not a directory): free space there, or set KLOOP_CACHE to a writable folder (glob)
  [1]
