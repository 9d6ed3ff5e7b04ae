#!/usr/bin/env bash
# bench/round2l_gpu.sh: GPU busy of tune runs on gemm_tiled once the first batches compile
# while the worker starts and the library reference is kept per GPU: a first run (fresh
# machine), then random and model at 100 and the quickstart's 45.
cd "$(dirname "$0")/.."
bash bench/tune_busy.sh kernels/gemm_tiled.lua "45 model 1" "100 random 1" "100 random 2" "100 model 1" "45 model 2"
