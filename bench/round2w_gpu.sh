#!/usr/bin/env bash
# bench/round2w_gpu.sh: after the start's compiles moved before the worker's spawn and
# the compilers read while a request waits: bench/round2v_gpu.sh (start costs, tunes with
# empty caches, GPU busy), then bench/kt_gpu/run.sh (Kernel Tuner side by side); the
# tables last, a few logs to $OUT.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
mkdir -p /tmp/r2v /tmp/kt
OUT=/tmp/r2v bash bench/round2v_gpu.sh > /tmp/r2v/table.txt 2>&1
OUT=/tmp/kt STEP_TIMEOUT=200 bash bench/kt_gpu/run.sh > /tmp/kt/run.log 2>&1
cp /tmp/r2v/table.txt "$O/r2v_table.txt"; cp /tmp/r2v/tune_gemm_model.log /tmp/r2v/tune_gemm_random.log "$O/"
cp /tmp/kt/run.log "$O/kt_run.log"; cp /tmp/kt/table.txt "$O/kt_table.txt" 2>/dev/null
cat /tmp/r2v/table.txt
tail -8 /tmp/kt/table.txt 2>/dev/null || tail -20 /tmp/kt/run.log
