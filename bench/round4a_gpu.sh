#!/usr/bin/env bash
# bench/round4a_gpu.sh: round 2, session 8's first call. Every GPU test (last session's
# mends had run only on the host), then gemm_tiled tunes with empty compile caches and
# GPU busy: the model at 100 with waits filled by its next points (--fill auto: 2) and
# without (--fill 0), side by side, random 100 and the quickstart's model 45; saxpy and
# stencil exhaustive with their time lines; in one process, how long NVML takes to
# name the compute capability against cuInit (could the first compiles start before the
# probe?). A table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
gpu_tests_logged
run() { fresh_cache; busy_rows "$@"; } # LABEL BUDGET OPTIONS...: on an empty compile cache
run model7fill 100 --seed 7 --method model
run model7nofill 100 --seed 7 --method model --fill 0
run model3fill 100 --seed 3 --method model
run model3nofill 100 --seed 3 --method model --fill 0
run random9 100 --seed 9 --method random
run quick45 45 --seed 1
for t in saxpy stencil; do
  fresh_cache
  s=$(date +%s.%N)
  build/kloop tune kernels/$t.lua --method exhaustive --no-store --profile none --promote off > "$O/ex_$t.log" 2>&1
  e=$(date +%s.%N)
  row "$t ex" "process $(awk "BEGIN{printf \"%.2f s\", $e-$s}"); $(grep -E '^run ' "$O/ex_$t.log" | cut -c1-110)"
  row "  time" "$(grep -E '^time:' "$O/ex_$t.log" | cut -c11-220)"
done
row "nvml vs cuInit" "$(python3 - <<'PY' 2>&1 | tail -1
import ctypes, time
t0 = time.perf_counter()
n = ctypes.CDLL("libnvidia-ml.so.1")
r1 = n.nvmlInit_v2()
h = ctypes.c_void_p()
r2 = n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
ma, mi = ctypes.c_int(), ctypes.c_int()
r3 = n.nvmlDeviceGetCudaComputeCapability(h, ctypes.byref(ma), ctypes.byref(mi))
t1 = time.perf_counter()
c = ctypes.CDLL("libcuda.so.1")
r4 = c.cuInit(0)
t2 = time.perf_counter()
print("nvml %.3f s (rc %d %d %d, sm_%d%d); cuInit after it %.3f s (rc %d)" % (t1 - t0, r1, r2, r3, ma.value, mi.value, t2 - t1, r4))
PY
)"
cat "$T/gpu_tests.txt"
for r in "${rows[@]}"; do echo "$r"; done
