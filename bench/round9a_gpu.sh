#!/usr/bin/env bash
# bench/round9a_gpu.sh (round 2, session 14): the host's fixed costs (bench/host_costs.lua:
# NVML's queries, the handle lookup the core now keeps, a store commit), round8g's
# side-by-side (gemm_tiled model 100, seeds 21 7 13, prev = var/prev_tune.lua, the strategy
# of aade22b, against new, alternated, empty compile caches), each run's requests split
# by bench/request_gaps.py, the stencil's exhaustive tune split the same way, and
# gemm_tiled's traced evaluations (bench/eval_breakdown.lua). Make var/prev_tune.lua
# first: git show aade22b:strategies/tune.lua > var/prev_tune.lua. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
{ echo "== host costs"; $K bench/host_costs.lua 200 "$T"; } >> "$L" 2>&1
row "host costs" "$(grep -E 'UUID|kl_nvml_sample|store write' "$L" | awk '{print $1, $(NF-1)}' | tr '\n' ' ')"
for seed in ${SEEDS:-21 7 13}; do
  for v in prev new; do
    if [ $v = prev ]; then export BUSY_STRATEGY=var/prev_tune.lua; else unset BUSY_STRATEGY; fi
    ab_row "model$seed $v" new "" --method model --seed "$seed"
    unset BUSY_STRATEGY
    gaps_row "$T/waits.log" "model$seed $v"
  done
done
fresh_cache
waits_begin
$K tune kernels/stencil.lua --method exhaustive --budget 22 --no-store --profile none --promote off --seed 1 > "$T/t.log" 2>&1
row "stencil 22" "$(grep -E '^run ' "$T/t.log" | sed 's/.*on //' | cut -c1-60)"
{ echo "== stencil"; cat "$T/t.log"; } >> "$L"
gaps_row "$KLOOP_WAITS_LOG" stencil
cp "$KLOOP_WAITS_LOG" "$O/waits_stencil.log"
unset KLOOP_WAITS_LOG
fresh_cache
{ echo "== breakdown gemm_tiled"; timeout 120 $K bench/eval_breakdown.lua 12 0.3 kernels/gemm_tiled.lua; } >> "$L" 2>&1
row "breakdown gemm_tiled" "$(grep '^BREAKDOWN' "$L" | tail -1 | cut -c12-230)"
row "  sample" "$(grep -E '^(sample|check_regions|_lua|timer_read) ' "$L" | tail -4 | tr -s ' ' | tr '\n' ';')"
printf '%s\n' "${rows[@]}" | cut -c1-300
