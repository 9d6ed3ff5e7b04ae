#!/usr/bin/env bash
# bench/round12e_gpu.sh (round 2, session 17, the last call): every GPU test at the
# session's end, the microsecond tunes twice each (stencil 22, saxpy 6: the hello's
# arrival and the run's rate) and gemm_tiled model 100 at seeds 7 and 13, empty compile
# caches. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
use_bin new
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
for t in stencil:22 saxpy:6; do
  for i in 1 2; do
    waits_begin
    micro_row "${t%%:*}$i" "${t%%:*}" "${t##*:}"
    row "  hello" "$(awk 'NR == 1 {t0 = $1} $2 == "reply" && $3 == "hello" {printf "%.3f s after the first compile queued", $1 - t0}' "$KLOOP_WAITS_LOG")"
    unset KLOOP_WAITS_LOG
  done
done
for seed in 7 13; do ab_row "model${seed}" new "" --method model --seed "$seed"; done
(cd "$O" && tar czf tunes.tgz tune_*.log 2>/dev/null && rm -f tune_*.log)
tail -10 "$T/gpu_tests.txt" | cut -c1-200
printf '%s\n' "${rows[@]}" | grep -v "thinks, compiles" | cut -c1-250
