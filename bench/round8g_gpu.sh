#!/usr/bin/env bash
# bench/round8g_gpu.sh (round 2, session 12; not run: the device time ran out): the last batch merged
# into the one before where it would be at most half a batch (tune's ahead_batch): gemm_tiled
# model 100, seeds 21, 7 and 13, prev (var/prev_tune.lua, the strategy of aade22b) against
# new, alternated on one machine, empty compile caches, each run's waits logged. Make
# var/prev_tune.lua first: git show aade22b:strategies/tune.lua > var/prev_tune.lua
SEEDS=${SEEDS:-21 7 13} exec bash "$(dirname "$0")/round8f_gpu.sh"
