#!/usr/bin/env bash
# bench/round2h_gpu.sh: compiling ahead (strategy.upcoming) and all compilers at once, on
# the GPU: tune runs with GPU busy and the summary's time line, then the breakdowns with
# the start's steps and the set-up's calls.
cd "$(dirname "$0")/.."
bash bench/tune_busy.sh kernels/gemm_tiled.lua "24 model 1" "40 model 1" "40 random 1"
bash bench/tune_busy.sh kernels/stencil.lua "21 exhaustive 1"
bash bench/breakdowns.sh saxpy stencil gemm_tiled
