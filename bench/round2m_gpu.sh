#!/usr/bin/env bash
# bench/round2m_gpu.sh: GPU busy of tune runs on gemm_tiled once the forest's fits are 7x
# cheaper (levels per feature in place of sorting rows): a first run (fresh machine),
# the model at 100 and 45, random at 100.
cd "$(dirname "$0")/.."
bash bench/tune_busy.sh kernels/gemm_tiled.lua "45 model 1" "100 model 1" "100 random 2" "45 model 2" "100 model 3"
