#!/usr/bin/env bash
# bench/round2b_gpu.sh: the cascade and Kernel Tuner-style kernels on the GPU: imported
# T1 examples (a plain C++ kernel found by its lowered name, a tunable vector add)
# checked and tuned, the adversarial suite, and tune on gemm_tiled with the cascade on
# and off at the same budget (candidates per minute, best found).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
work=$(mktemp -d)
cp tests/import_kt/* "$work/"
export KLOOP_DB="$out/round2b.db"
for t in scale_cpp vadd; do
  build/kloop import-kt "$work/$t.json" > /dev/null 2>&1 || echo "import $t failed"
  build/kloop check "$work/$t.cu" 2>&1 | grep -E "verdict|ok|time|error|wrong" | head -3
done
build/kloop tune "$work/vadd.cu" --budget 12 --timing-budget 0.2 --profile none --seed 2 2>&1 | tail -4
build/kloop tests/adversarial/run.lua > "$out/adversarial.log" 2>&1; echo "adversarial: exit $? $(tail -1 "$out/adversarial.log")"
for c in on off; do
  echo "== tune gemm_tiled --cascade $c"
  build/kloop tune kernels/gemm_tiled.lua --budget 45 --timing-budget 0.3 --profile none --seed 11 --cascade $c 2>&1 | tail -5
done
