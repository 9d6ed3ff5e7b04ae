#!/usr/bin/env bash
# bench/round12b_gpu.sh (round 2, session 17): the microsecond tunes' start, three ways,
# alternated (stencil exhaustive 22, empty compile caches, three rounds): v0 the built-in
# Lua; v1 (var/v1) kloop's own kernels compiled as needed now (nice 10), not as guesses
# beside the first batch's; v2 (var/v2) v1 and the first batch's compiles held until the
# worker's hello. Each run: its seconds, the hello's arrival and the setup's start after
# the first compile was queued, the start's parts. Then a warm-cache run (every binary
# cached: the start with no compiles), the traced breakdown of stencil, saxpy v0/v1. One
# log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
start_row() {
  awk 'NR == 1 {t0 = $1} $2 == "reply" && $3 == "hello" {h = $1 - t0} $2 == "sent" && $3 == "setup" {s = $1 - t0}
       $2 == "start" {sub(/^[0-9.]+ start /, ""); p = $0} END {printf "hello %.3f setup %.3f | %s", h, s, p}' "$1"
}
run_v() { # LABEL VARIANT TASK BUDGET [warm]
  if [ "$2" = v0 ]; then use_bin new; else VARIANT=var/$2 use_bin var; fi
  waits_begin
  if [ "${5:-}" = warm ]; then
    $K tune "kernels/$3.lua" --method exhaustive --budget "$4" --no-store --profile none --promote off --seed 1 > "$T/t.log" 2>&1
    rm -f "$KLOOP_WAITS_LOG"
    local s e
    s=$(date +%s.%N)
    $K tune "kernels/$3.lua" --method exhaustive --budget "$4" --no-store --profile none --promote off --seed 1 > "$T/t.log" 2>&1
    e=$(date +%s.%N)
    row "$1" "$(grep -E '^run ' "$T/t.log" | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s"
  else
    micro_row "$1" "$3" "$4"
  fi
  row "  start" "$(start_row "$KLOOP_WAITS_LOG")"
  cp "$KLOOP_WAITS_LOG" "$O/waits_$1.log"
  unset KLOOP_WAITS_LOG
}
for i in 1 2 3; do
  for v in v0 v1 v2; do run_v "stencil$i$v" $v stencil 22; done
done
fresh_cache
run_v stencil_warm v0 stencil 22 warm
for v in v0 v1; do run_v "saxpy$v" $v saxpy 6; done
use_bin new
fresh_cache
build/kloop bench/eval_breakdown.lua 21 1.0 kernels/stencil.lua > "$O/bd_stencil.txt" 2>&1
row "bd stencil" "$(grep -E '^(start|BREAKDOWN)' "$O/bd_stencil.txt" | tr '\n' ' ' | cut -c1-280)"
(cd "$O" && tar czf waits.tgz waits_*.log && rm -f waits_*.log)
printf '%s\n' "${rows[@]}" | cut -c1-300
