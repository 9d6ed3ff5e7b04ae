#!/usr/bin/env bash
# bench/round7d_gpu.sh (round 2, session 11, the session's last call): gemm_tiled model
# 100 (seeds 7, 9, 13), alternated on one machine, empty compile caches:
#   base: every compiler at the parent's niceness under the old slot rule
#         (KLOOP_COMPILE_NICE=0), think run whole (var/noslice: lua/ with
#         kloop.search.slice's enabled = false);
#   prev: the session's code with tune's guess run whole (var/prev_tune.lua: the
#         strategy of the commit before, which swapped the context in place);
#   new:  the guess on a copy of the context, so it yields too.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
for seed in 7 9 13; do
  VARIANT=var/noslice ab_row "model$seed base" var 0 --method model --seed $seed
  export BUSY_STRATEGY=var/prev_tune.lua
  ab_row "model$seed prev" new "" --method model --seed $seed
  unset BUSY_STRATEGY
  ab_row "model$seed new" new "" --method model --seed $seed
done
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
