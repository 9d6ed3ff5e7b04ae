#!/usr/bin/env bash
# bench/round2j_gpu.sh: GPU busy of tune runs on gemm_tiled with the set-up on the device,
# compiling ahead and compiled candidates first: model and random at 40 and 100.
cd "$(dirname "$0")/.."
bash bench/tune_busy.sh kernels/gemm_tiled.lua "40 model 1" "40 model 2" "100 model 1" "40 random 1" "100 random 1"
