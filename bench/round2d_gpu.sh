#!/usr/bin/env bash
# bench/round2d_gpu.sh: round 2's third session on the GPU in one call: every GPU test
# (the adversarial suite among them) after the digest checks, the shipped tasks of issue
# 16 (check, the space, a short tune), where an evaluation's time goes
# (bench/eval_breakdown.lua) and how busy the GPU is during a tune run
# (bench/gpu_busy.sh); a table last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
K=build/kloop
rows=()
row() { rows+=("$(printf '%-26s %s' "$1" "$2")"); }
$K doctor 2>&1 | sed -n 1,6p
for t in tests/gpu/*.lua; do
  name=$(basename "$t" .lua)
  s=$(date +%s)
  $K "$t" > "$out/gpu_$name.log" 2>&1; rc=$?
  echo "== gpu_$name (exit $rc)"; tail -6 "$out/gpu_$name.log"
  row "gpu_$name" "exit $rc, $(( $(date +%s) - s )) s"
done
for t in reduce conv2d axpy_tmpl stencil; do
  c=$($K check kernels/$t.lua --json 2>"$out/check_$t.err" | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['verdict'], '%.4f ms' % (r.get('time_ms') or 0), (r.get('reason') or '')[:60])" 2>&1)
  b=$($K tune kernels/$t.lua --budget 16 --no-store --promote off --profile none --timing-budget 0.3 --quiet 2>&1 | grep -E '^best:' | cut -c1-110)
  sp=$($K space kernels/$t.lua 2>&1 | tail -1)
  echo "== $t: check $c | $b | $sp"
  row "task $t" "check $c | $b | $sp"
done
$K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua > "$out/breakdown.log" 2>&1
head -12 "$out/breakdown.log"; tail -1 "$out/breakdown.log"
row "breakdown gemm_tiled" "$(tail -1 "$out/breakdown.log" | sed 's/^BREAKDOWN: //' | cut -c1-150)"
bash bench/gpu_busy.sh kernels/gemm_tiled.lua 24 --seed 1 --timing-budget 0.3 > "$out/busy.log" 2>&1
tail -3 "$out/busy.log"
row "tune gemm_tiled 24 (0.3 s)" "$(grep -E '^GPU_BUSY|^WALL' "$out/busy.log" | tr '\n' ' ')"
echo
echo "== summary"
for r in "${rows[@]}"; do echo "$r"; done
