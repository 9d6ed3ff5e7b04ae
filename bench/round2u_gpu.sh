#!/usr/bin/env bash
# bench/round2u_gpu.sh: after the review mends: the fills' bits, the adversarial suite
# and the device comparison again, kloop check of the big-input tasks, and a 100-candidate
# model search of gemm_tiled with an empty compile cache; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
OUT=$O bash bench/gpu_tests.sh tests/gpu/fill_device.lua tests/gpu/adversarial.lua tests/gpu/compare_device.lua
for t in saxpy stencil haxpy conv2d; do
  timeout -s INT -k 10 120 build/kloop check kernels/$t.lua > "$O/check_$t.log" 2>&1
  printf '%-30s %s\n' "check $t" "exit $? $(grep -h -E '^(verdict|time) ' "$O/check_$t.log" | tr -s ' ' | cut -c1-60 | tr '\n' ' ')"
done
C0=$(mktemp -d); KLOOP_CACHE=$C0 build/kloop tune kernels/gemm_tiled.lua --budget 8 --no-store --method random --seed 99 >/dev/null 2>&1; rm -rf "$C0"
C=$(mktemp -d)
KLOOP_CACHE=$C OUT=$O bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed 7 --timing-budget 0.3 --promote off --method model > "$O/m7.log" 2>&1
rm -rf "$C"
echo "model 100 seed 7, empty cache: $(grep -E '^(GPU_BUSY|WALL)' "$O/m7.log" | cut -c1-60 | tr '\n' ' ')"
echo "  $(grep -h -E '^(time|best):' "$O"/gpu_busy.*/tune.log | cut -c1-170 | tr '\n' ' ')"
