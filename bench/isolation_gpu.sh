#!/usr/bin/env bash
# bench/isolation_gpu.sh: the isolation work on the GPU in one call: the GPU tests, the
# adversarial suite in one evaluator, the beam run against the scripted mock, and the
# throughput bench before (a build of the previous commit, in .head/, if present) and after.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
build/kloop --version
for t in tests/gpu/*.lua; do
  name=$(basename "$t" .lua)
  [ "$name" = adversarial ] && continue
  /usr/bin/time -f "  ($name: %e s)" build/kloop "$t" > "$out/gpu_$name.log" 2>&1
  echo "gpu_$name: exit $? $(grep -cE '^PASS' "$out/gpu_$name.log") PASS, $(grep -cE '^FAIL' "$out/gpu_$name.log") FAIL"
done
build/kloop tests/adversarial/run.lua > "$out/adversarial.log" 2>&1; echo "adversarial: exit $?"
bash bench/isolation_beam.sh > "$out/beam.log" 2>&1; echo "beam: exit $?"
if [ -x .head/kloop ]; then KLOOP_EMBEDDED_ONLY=1 .head/kloop bench/eval_throughput.lua 40 > "$out/tp_before.log" 2>&1; fi
build/kloop bench/eval_throughput.lua 40 > "$out/tp_after.log" 2>&1
echo "== isolation"; cat "$out/gpu_isolation.log"
echo "== adversarial"; cat "$out/adversarial.log"
echo "== beam"; tail -8 "$out/beam.log"
echo "== throughput before"; grep -E "THROUGHPUT|evaluate|best" "$out/tp_before.log" 2>/dev/null
echo "== throughput after"; grep -E "THROUGHPUT|evaluate|best" "$out/tp_after.log"
