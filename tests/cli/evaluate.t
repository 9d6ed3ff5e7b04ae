kloop compile and check: what works without a GPU, and the exit codes.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache
  $ cd "$KLOOP_SRC"

compile works without a GPU and prints the resource usage:

  $ kloop compile kernels/gemm.cu | sed 's/[0-9.]* s)/T s)/'
  gemm.cu: ok (sm_90, T s)
    gemm: 32 registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads
  $ kloop compile kernels/gemm.cu --candidate kernels/gemm_tiled.cu --params BM=128,BN=128,TM=8,TN=8 --json | grep -o '"verdict":"ok"'
  "verdict":"ok"

A fenced include is rejected, a compile error shows the log; both exit 3:

  $ kloop compile kernels/gemm.cu --candidate tests/adversarial/include_host_file.cu; echo "exit $?"
  include_host_file.cu: rejected (sm_90, 0.00 s)
  line 5: #include of '/etc/shadow' is refused (absolute paths and .. are not allowed)
  exit 3
  $ printf 'extern "C" __global__ void gemm(int M, int N, int K, const float *A, const float *B, float *C) { undeclared = 1; }\n' > /tmp/kloop_cli_bad.cu
  $ kloop compile kernels/gemm.cu --candidate /tmp/kloop_cli_bad.cu | grep -c 'identifier "undeclared" is undefined'
  1
  $ kloop compile kernels/gemm.cu --candidate /tmp/kloop_cli_bad.cu > /dev/null; echo "exit $?"
  exit 3

Bad arguments:

  $ kloop compile; echo "exit $?"
  kloop compile: give one TARGET
  usage: kloop compile TARGET [--candidate FILE] [--arch sm_90] [--params K=V,...] [--json]
                       [--all-sizes]
  
  Compiles the task's kernel (or FILE) with NVRTC to a cubin for ARCH (default sm_90),
  or, for a .c task, with the system C compiler (cc, -O3 -march=native) to a shared object,
  through the same include and option fences as an evaluation; prints the log and the
  resource usage (registers, shared memory, stack, spills). Works without a GPU.
  A task with its sizes compiled in (sizes_as_defines) is compiled at the bench size,
  or with --all-sizes at every size, one binary each.
  Exit: 0 compiled, 3 did not compile (or was rejected), 1 error, 2 bad usage.
  exit 2
  $ kloop compile kernels/nope.cu; echo "exit $?"
  kloop compile: kernels/nope.cu: no task sidecar (expected kernels/nope.lua next to the kernel; see docs/TASKS.md)
  exit 1
  $ kloop compile kernels/gemm.cu --arch 90 2>&1 | tail -1
  arch must look like sm_90, got 90
  $ kloop compile kernels/gemm.cu --params 'BM:64' 2>&1; echo "exit $?"
  kloop compile: --params: bad parameter 'BM:64' (use NAME=VALUE,...)
  exit 2

Without a GPU, check says so plainly and exits non-zero:

  $ kloop check kernels/gemm.cu 2>&1 | sed 's/(no NVIDIA driver.*); /(DRIVER); /'
  kloop check: no GPU here (DRIVER); `kloop compile kernels/gemm.cu` works without one
  $ kloop check kernels/gemm.cu 2>/dev/null; echo "exit $?"
  exit 1
  $ kloop check --help | head -1
  usage: kloop check TARGET [--candidate FILE] [--params K=V,...] [--json]

profile needs a GPU too; its usage errors come first, naming what is wrong:

  $ kloop profile kernels/gemm.cu 2>&1 | sed 's/(no NVIDIA driver.*); /(DRIVER); /'
  kloop profile: no GPU here (DRIVER); `kloop compile kernels/gemm.cu` works without one
  $ kloop profile kernels/gemm.cu 2>/dev/null; echo "exit $?"
  exit 1
  $ kloop profile kernels/gemm.cu --metrics 'dram__bytes_read.sum,bogus' 2>&1; echo "exit $?"
  kloop profile: --metrics: 'bogus' is not a metric name (names look like dram__bytes_read.sum)
  exit 2
  $ kloop profile 2>&1 | head -1; kloop profile >/dev/null 2>&1; echo "exit $?"
  kloop profile: give one TARGET
  exit 2
  $ kloop profile examples/cpu/sgemm.c 2>&1; echo "exit $?"
  kloop profile: examples/cpu/sgemm.c is a host task; profiling needs a CUDA task (kloop check works for both)
  exit 1
  $ kloop profile --help | grep -c '^  [a-z0-9_]*__[a-z0-9_.]*$'
  14

A strategy's --profile and --metrics options are checked before anything runs:

  $ kloop greedy examples/cpu/sgemm.c --profile sometimes 2>&1; echo "exit $?"
  kloop: --profile sometimes: give best, all or none
  exit 2
  $ kloop greedy examples/cpu/sgemm.c --metrics 'x y' 2>&1; echo "exit $?"
  kloop: --metrics: 'x y' is not a metric name (names look like dram__bytes_read.sum)
  exit 2

Ctrl-C (SIGINT) ends a running chunk with an error, exit 1:

  $ timeout -s INT 1 "$KLOOP" -e 'jit.off() while true do end' 2>&1 | head -1
  kloop: interrupted
