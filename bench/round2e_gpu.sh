#!/usr/bin/env bash
# bench/round2e_gpu.sh: the comparison on the device against the host (tests/gpu/compare_device.lua),
# the adversarial suite, the breakdown on saxpy, stencil and gemm_tiled, GPU busy during a tune run,
# and bench/kt_gpu/run.sh (Kernel Tuner side by side), in one call on the GPU machine.
set -u
K=build/kloop
$K tests/gpu/compare_device.lua 2>&1 | tail -8
$K tests/gpu/adversarial.lua > /tmp/adv.log 2>&1; echo "adversarial exit $?: $(tail -1 /tmp/adv.log)"
for t in saxpy stencil; do $K bench/eval_breakdown.lua 8 0.3 kernels/$t.lua 2>&1 | tail -1; done
$K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua 2>&1 | tail -1
bash bench/gpu_busy.sh kernels/gemm_tiled.lua 24 --seed 1 --timing-budget 0.3 2>&1 | tail -2
OUT=/tmp/ktout bash bench/kt_gpu/run.sh > /tmp/kt.log 2>&1; grep -A5 "^task " /tmp/kt.log; grep "KT:" /tmp/kt.log
