#!/usr/bin/env bash
# bench/round2x_gpu.sh: the machine's CPUs, then NVRTC's latency and throughput against
# the number of compilers at once (bench/compile_scaling.lua, 32 gemm_tiled variants,
# each level twice).
cd "$(dirname "$0")/.."
lscpu | grep -E '^(Model name|Thread|Core|Socket|CPU\(s\))' | tr -s ' '
C=$(mktemp -d); KLOOP_CACHE=$C build/kloop bench/compile_scaling.lua ${LEVELS:-16,4,6,8,10,12,16} sm_90 2 2>&1; rm -rf "$C"
