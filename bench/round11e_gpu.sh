#!/usr/bin/env bash
# bench/round11e_gpu.sh (round 2, session 16): the spill (a batch's last compile carried
# into the next batch once that one has run) against the commit before it (built by hand
# as build/old/kloop, its strategy as var/old_tune.lua), alternated on one machine, empty
# compile caches: gemm_tiled model 100 at seed 13 (whose random start holds a 3.3 s
# compile: round11d waited 1.06 s for it), 7, 3 and 17; each run's waits over 0.3 s and
# its spills (SEEDS: other seeds). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
old_new_spills ${SEEDS:-13 7 3 17}
(cd "$O" && tar czf tunes.tgz tune_*.log && rm -f tune_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
