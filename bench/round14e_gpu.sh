#!/usr/bin/env bash
# bench/round14e_gpu.sh (round 2, session 19): whether the clocks read during the first
# and the last timed repetition move their times (bench/clock_reads.lua), on stencil,
# saxpy and gemm_tiled's own kernels, with the clocks read during (new) and outside the
# timing (var/pre: 1d7b755's Lua), alternated. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for t in stencil:20 saxpy:20 gemm_tiled:8; do
  for v in pre new; do
    pick $v
    fresh_cache
    { echo "== $v"; timeout 100 $K bench/clock_reads.lua "kernels/${t%%:*}.lua" "${t##*:}" 20 2>&1; } | tee -a "$L" | tail -8
  done
done
