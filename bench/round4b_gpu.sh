#!/usr/bin/env bash
# bench/round4b_gpu.sh: session 8's second call. The probe's test (NVML's arch hint);
# the start with kloop's own kernels and the reference compiling from NVML's hint, before
# the probe (build/kloop) against the commit before it (build/kloop_prev), alternated, on
# saxpy and stencil exhaustive with empty caches; gemm_tiled model 100 (seeds 7, 3) with
# batches of 8, 12 and 16 once choosing ahead, waits logged; then Kernel Tuner on the
# microsecond spaces (TASKS=saxpy,stencil bench/kt_gpu/run.sh). A table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
row "probe test" "$(build/kloop tests/gpu/probe.lua 2>&1 | tail -1 | cut -c1-120)"
for i in 1 2; do
  for b in kloop_prev kloop; do
    for t in saxpy stencil; do
      fresh_cache
      s=$(date +%s.%N)
      build/$b tune kernels/$t.lua --method exhaustive --budget 40 --no-store --profile none --promote off > "$T/ex.log" 2>&1
      e=$(date +%s.%N)
      row "$t $b $i" "process $(awk "BEGIN{printf \"%.2f s\", $e-$s}"); $(grep -E '^run ' "$T/ex.log" | sed 's/.*: //' | cut -c1-60); $(grep -E '^time:' "$T/ex.log" | cut -c11-120)"
    done
  done
done
for seed in 7 3; do
  for ab in 8 12 16; do
    fresh_cache
    export KLOOP_WAITS_LOG=$O/waits_${seed}_$ab.log
    busy_rows "model$seed ab$ab" 100 --seed $seed --ahead-batch $ab
    unset KLOOP_WAITS_LOG
  done
done
unset KLOOP_CACHE
TASKS=saxpy,stencil OUT=$T/kt timeout 280 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
cp "$T/kt.txt" "$O/kt.txt"
tail -8 "$T/kt.txt"
for r in "${rows[@]}"; do echo "$r"; done
