#!/usr/bin/env bash
# bench/round3h_gpu.sh: the worker spawned (its hello sent) before the driver's GPU
# probe, so its CUDA start overlaps the probe's: exhaustive tunes of saxpy and stencil
# (process wall and the run's own clock) and gemm_tiled random 100 (GPU busy), each with
# an empty compile cache; a table last.
cd "$(dirname "$0")/.."
T=$(mktemp -d)
for t in saxpy:6 stencil:22 saxpy:6 stencil:22; do
  n=${t#*:}; t=${t%:*}
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  s=$(date +%s.%N)
  build/kloop tune kernels/$t.lua --method exhaustive --budget $n --no-store --profile none --promote off --seed 1 > "$T/t.log" 2>&1
  rc=$?; e=$(date +%s.%N)
  printf '%-16s %s\n' "$t exhaustive" "exit $rc process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s; $(grep -E '^run ' "$T/t.log" | cut -c1-90)"
  printf '%-16s %s\n' "  time" "$(grep -E '^time:' "$T/t.log" | cut -c11-160)"
done
rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed 9 --timing-budget 0.3 --promote off --method random > "$T/busy.log" 2>&1
printf '%-16s %s\n' "random 100" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
printf '%-16s %s\n' "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-200)"
