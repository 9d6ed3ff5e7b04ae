#!/usr/bin/env bash
# bench/round2_gpu.sh: this round's GPU checks in one call: doctor (NVRTC and CUPTI
# companions from the toolkit folder), the GPU tests, the adversarial suite, a beam run
# with no model on the naive gemm (implicit parameters), and tune's learning search on
# gemm_tiled at a budget of 45 (10% of its 444 valid points; the optimum is 4.556 ms).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
build/kloop doctor 2>&1 | sed -n 1,12p
for t in tests/gpu/*.lua; do
  name=$(basename "$t" .lua)
  [ "$name" = adversarial ] && continue
  build/kloop "$t" > "$out/gpu_$name.log" 2>&1
  echo "gpu_$name: exit $? $(grep -cE '^PASS' "$out/gpu_$name.log") PASS, $(grep -cE '^FAIL' "$out/gpu_$name.log") FAIL"
done
build/kloop tests/adversarial/run.lua > "$out/adversarial.log" 2>&1; echo "adversarial: exit $? $(tail -1 "$out/adversarial.log")"
export KLOOP_DB="$out/round2.db"
echo "== beam, no model (implicit parameters)"
build/kloop beam kernels/gemm.cu --budget 16 --timing-budget 0.3 --profile none --seed 3 2>&1 | tail -6
echo "== tune --method model, budget 45"
build/kloop tune kernels/gemm_tiled.lua --budget 45 --timing-budget 0.3 --profile none --seed 11 2>&1 | tail -6
