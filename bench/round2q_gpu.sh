#!/usr/bin/env bash
# bench/round2q_gpu.sh: GPU busy of gemm_tiled tune runs once the model chooses a batch
# ahead, then Kernel Tuner side by side (bench/kt_gpu/run.sh, results under $OUT/kt);
# a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 model 3" "45 model 2" "100 random 2" > "$O/busy.txt" 2>&1
mkdir -p "$O/kt"
OUT=$O/kt bash bench/kt_gpu/run.sh > "$O/kt/run.log" 2>&1
grep -E "^(rc|== )" "$O/kt/run.log" | tail -12
cat "$O/kt/table.txt"
cat "$O/busy.txt"
