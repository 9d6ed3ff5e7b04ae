#!/usr/bin/env bash
# bench/round2s_gpu.sh: GPU busy of gemm_tiled tune runs each with an empty compile
# cache (KLOOP_CACHE fresh per run: a task searched for the first time), the model with
# and without choosing one batch ahead, and random search; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
run() {
  C=$(mktemp -d)
  KLOOP_CACHE=$C OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "$@" 2>&1
  rm -rf "$C"
}
# a first search on this machine warms the page cache (NVRTC, headers), not the compile cache
C0=$(mktemp -d); KLOOP_CACHE=$C0 build/kloop tune kernels/gemm_tiled.lua --budget 8 --no-store --method random --seed 99 >/dev/null 2>&1; rm -rf "$C0"
run "100 model 7"
C=$(mktemp -d)
KLOOP_CACHE=$C OUT=$O bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed 7 --timing-budget 0.3 --promote off --method model --ahead off > "$O/off.log" 2>&1
rm -rf "$C"
echo "gemm_tiled 100 model seed 7, --ahead off: $(grep -E '^(GPU_BUSY|WALL)' "$O/off.log" | cut -c1-60 | tr '\n' ' ')"
echo "  time $(grep -h -E "^time:" "$O"/gpu_busy.*/tune.log | tail -1 | cut -c11-190)"
run "100 random 9"
