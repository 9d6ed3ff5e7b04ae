#!/usr/bin/env bash
# bench/round3d_gpu.sh: model searches of gemm_tiled with an empty compile cache after
# think's guess is queued at once, each compile wait logged (KLOOP_WAITS_LOG); seeds 7
# and 3, then random 100 for the record; a table last. (The call of this name in
# docs/BENCHMARKS.md also ran each model seed with an uncommitted experiment, fewer
# guess compilers while a batch's compiles run; it did not help and was dropped.)
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
K=$PWD/build/kloop
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
run() { # LABEL KLOOP METHOD SEED
  rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache
  KLOOP=$2 KLOOP_WAITS_LOG=$O/waits_$1.txt OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua 100 --seed "$4" \
    --timing-budget 0.3 --promote off --method "$3" > "$T/busy.log" 2>&1
  row "$1" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-230)"
  row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-100)"
  row "  waits" "$(awk '{n++; s+=$3} END {printf "%d waits, %.1f s", n, s}' "$O/waits_$1.txt" 2>/dev/null)"
  cp "$T"/gpu_busy.*/tune.log "$O/tune_$1.log"; rm -rf "$T"/gpu_busy.*
}
run model7 "$K" model 7
run model3 "$K" model 3
run random9 "$K" random 9
for r in "${rows[@]}"; do echo "$r"; done
