#!/usr/bin/env bash
# bench/round2k_gpu.sh: GPU busy of tune runs on gemm_tiled (the quickstart's 45-candidate
# model search, two seeds; random and model at 100), the main job (beam on the naive gemm,
# no model: implicit parameters), and the microsecond tasks' start.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
bash bench/tune_busy.sh kernels/gemm_tiled.lua "45 model 1" "45 model 2" "100 random 1" "100 model 1"
$K beam kernels/gemm.cu --budget 16 --seed 1 --no-store > "${OUT:-/tmp}/beam.log" 2>&1
echo "beam gemm.cu 16: exit $?: $(grep -E '^(run |best:|time:)' "${OUT:-/tmp}/beam.log" | tr '\n' ' ' | cut -c1-300)"
bash bench/breakdowns.sh saxpy stencil
