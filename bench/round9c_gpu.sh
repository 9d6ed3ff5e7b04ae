#!/usr/bin/env bash
# bench/round9c_gpu.sh (round 2, session 14): a background compile's binary judged from the
# compiler's bytes (its image id and static data taken as it ends, not read back in the
# gap between two requests) against the commit before (d9681a9, built by hand as
# build/old/kloop), alternated on one machine, empty compile caches: gemm_tiled model 100
# (seeds 7, 13, 21) and stencil 22 (twice), every run's requests split by
# bench/request_gaps.py (the largest gaps line by line); the new runs' waits logs kept.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
KEEP_WAITS=1 old_new_gaps 7 13 21
rm -f "$O"/tune_*old.log
printf '%s\n' "${rows[@]}" | cut -c1-300
