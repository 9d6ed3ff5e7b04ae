#!/usr/bin/env bash
# bench/round2o_gpu.sh: the session's first call: every GPU test on the code as it
# stands, where a microsecond task's fixed cost goes (the probe, the process, the
# worker's start), and GPU busy of gemm_tiled tune runs; a table last.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-30s %s' "$1" "$2")"); }
OUT=$O bash bench/gpu_tests.sh > "$O/gpu_tests.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/gpu_tests.txt"
# the probe alone, and a process that probes and stops
for i in 1 2; do
  s=$(date +%s.%N); $K version > /dev/null 2>&1; e=$(date +%s.%N)
  row "kloop version ($i)" "$(awk "BEGIN{printf \"%.3f s\", $e-$s}")"
done
OUT=$O bash bench/tune_fresh.sh saxpy stencil > "$O/fresh.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/fresh.txt"
OUT=$O bash bench/breakdowns.sh saxpy stencil > "$O/bd.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/bd.txt"
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 random 2" > "$O/busy.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/busy.txt"
for r in "${rows[@]}"; do echo "$r"; done
