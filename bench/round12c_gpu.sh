#!/usr/bin/env bash
# bench/round12c_gpu.sh (round 2, session 17): kloop's own kernels shipped in the binary
# and fewer guesses compiling beside the worker's CUDA start, alternated on one machine,
# empty compile caches: a (var/a: the Lua of the session's start, its own kernels
# compiled at run time), b (var/b: shipped, no hold), new (shipped, 4 guesses beside the
# start), c (var/c: shipped, 8). stencil exhaustive 22 three rounds, saxpy 6 twice (a,
# new), gemm_tiled model 100 at seeds 7 and 13 (a, new), the traced stencil breakdown,
# Kernel Tuner on the microsecond spaces (new). One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
start_row() {
  awk 'NR == 1 {t0 = $1} $2 == "reply" && $3 == "hello" {h = $1 - t0} $2 == "sent" && $3 == "setup" {s = $1 - t0}
       $2 == "start" {sub(/^[0-9.]+ start /, ""); p = $0} END {printf "hello %.3f setup %.3f | %s", h, s, p}' "$1"
}
pick() { if [ "$1" = new ]; then use_bin new; else VARIANT=var/$1 use_bin var; fi; }
run_v() { # LABEL VARIANT TASK BUDGET
  pick "$2"
  waits_begin
  micro_row "$1" "$3" "$4"
  row "  start" "$(start_row "$KLOOP_WAITS_LOG")"
  cp "$KLOOP_WAITS_LOG" "$O/waits_$1.log"
  unset KLOOP_WAITS_LOG
}
for i in 1 2 3; do
  for v in a b new c; do run_v "stencil$i$v" $v stencil 22; done
done
for i in 1 2; do
  for v in a new; do run_v "saxpy$i$v" $v saxpy 6; done
done
for seed in 7 13; do
  VARIANT=var/a ab_row "model${seed}a" var "" --method model --seed "$seed"
  ab_row "model${seed}new" new "" --method model --seed "$seed"
done
use_bin new
fresh_cache
build/kloop bench/eval_breakdown.lua 21 1.0 kernels/stencil.lua > "$O/bd_stencil.txt" 2>&1
row "bd stencil" "$(grep -E '^(start|BREAKDOWN)' "$O/bd_stencil.txt" | tr '\n' ' ' | cut -c1-280)"
row "  sample" "$(grep -E '^(sample|check_regions|timer_read) ' "$O/bd_stencil.txt" | tr -s ' ' | tr '\n' ';')"
TASKS=saxpy,stencil OUT=$T/kt timeout 200 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
{ echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
(cd "$O" && tar czf waits.tgz waits_*.log && rm -f waits_*.log; tar czf kt.tgz -C "$T" kt; tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
tail -12 "$T/kt.txt" | cut -c1-260
printf '%s\n' "${rows[@]}" | cut -c1-300
