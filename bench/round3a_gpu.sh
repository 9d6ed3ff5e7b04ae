#!/usr/bin/env bash
# bench/round3a_gpu.sh: where a tune run's wall time goes beyond the worker, with the
# new time-line parts (host prep, queueing) and the driver's CPU sampled
# (KLOOP_LUAPROF): gemm_tiled random 100 and model 100 with an empty compile cache, the
# model run again with its binaries cached, and saxpy exhaustive; a table last, the
# profiles to $OUT.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-24s %s' "$1" "$2")"); }
run() { # LABEL TASK BUDGET METHOD SEED [keep]
  local label=$1 task=$2; shift 2
  [ "${5:-}" = keep ] || { rm -rf "$T/cache"; mkdir -p "$T/cache"; }
  export KLOOP_CACHE=$T/cache
  KLOOP_LUAPROF=$O/prof_$label.txt OUT=$T bash bench/gpu_busy.sh "$task" "$1" --seed "$3" --timing-budget 0.3 \
    --promote off --method "$2" > "$T/busy.log" 2>&1
  row "$label" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-230)"
  row "  driver CPU" "$(head -6 "$O/prof_$label.txt" | tr -s ' ' | tr '\n' ' ' | cut -c1-200)"
  cp "$T"/gpu_busy.*/tune.log "$O/tune_$label.log"; rm -rf "$T"/gpu_busy.*
}
run random100 kernels/gemm_tiled.lua 100 random 9
run model100 kernels/gemm_tiled.lua 100 model 7
run model100warm kernels/gemm_tiled.lua 100 model 7 keep
run saxpy_exh kernels/saxpy.lua 6 exhaustive 1
for r in "${rows[@]}"; do echo "$r"; done
