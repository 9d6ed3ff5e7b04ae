#!/usr/bin/env bash
# bench/round2f_gpu.sh: the session's last GPU call: the task with its sizes compiled in
# (kernels/transpose), --gpus on a one-GPU machine, the breakdown of a microsecond task
# after the parallel fill, the adversarial suite and the device comparison once more.
set -uo pipefail
cd "$(dirname "$0")/.."
K=build/kloop
rows=()
row() { rows+=("$(printf '%-24s %s' "$1" "$2")"); }
c=$($K check kernels/transpose.lua 2>&1 | grep -E '^(verdict|reason|time) ' | tr -s ' ' | tr '\n' ' ')
echo "== transpose check: $c"; row "transpose check" "$c"
$K tune kernels/transpose.lua --budget 10 --timing-budget 0.3 --no-store 2>&1 | grep -E '^(run|verdicts|baseline|best)' > /tmp/tr.log
cat /tmp/tr.log; row "transpose tune" "$(grep -E '^best' /tmp/tr.log)"
$K compile kernels/transpose.lua --all-sizes 2>&1 | tail -6
$K tune kernels/gemm_tiled.lua --gpus all --budget 8 --timing-budget 0.2 --no-store --promote off 2>&1 | grep -E '^(run|best|workers)' > /tmp/g.log
cat /tmp/g.log; row "--gpus all (1 GPU)" "$(grep -E '^run' /tmp/g.log | cut -c1-90)"
$K tune kernels/gemm_tiled.lua --gpus 0,1 --budget 8 --no-store > /tmp/g2.log 2>&1; r=$?
row "--gpus 0,1 (1 GPU)" "exit $r: $(tail -1 /tmp/g2.log)"
$K bench/eval_breakdown.lua 8 0.3 kernels/saxpy.lua > /tmp/bd.log 2>&1
head -9 /tmp/bd.log; tail -1 /tmp/bd.log; row "breakdown saxpy" "$(tail -1 /tmp/bd.log | cut -c12-160)"
$K tests/gpu/adversarial.lua > /tmp/adv.log 2>&1; row "adversarial" "exit $?: $(tail -1 /tmp/adv.log)"
$K tests/gpu/compare_device.lua > /tmp/cd.log 2>&1; row "compare_device" "exit $?: $(tail -1 /tmp/cd.log)"
echo; for r in "${rows[@]}"; do echo "$r"; done
