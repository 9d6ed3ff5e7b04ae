#!/usr/bin/env bash
# bench/round2p_gpu.sh: inputs drawn on the device (the fill's bits against the host's,
# every GPU test, kloop check of every shipped task), the start-up that saves, and GPU
# busy of gemm_tiled tune runs once the model favours its guess; a table last.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-30s %s' "$1" "$2")"); }
OUT=$O bash bench/gpu_tests.sh > "$O/gpu_tests.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/gpu_tests.txt"
row "  fill speed" "$(grep -h '^fill of' "$O/t_fill_device.log")"
for t in axpy_tmpl conv2d gemm gemm_tiled haxpy reduce saxpy stencil transpose; do
  timeout -s INT -k 10 120 $K check kernels/$t.lua > "$O/check_$t.log" 2>&1
  row "check $t" "exit $? $(grep -h -E '^(verdict|time) ' "$O/check_$t.log" | tr -s ' ' | cut -c1-60 | tr '\n' ' ')"
done
OUT=$O bash bench/tune_fresh.sh saxpy stencil > "$O/fresh.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/fresh.txt"
OUT=$O bash bench/breakdowns.sh saxpy stencil gemm_tiled > "$O/bd.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/bd.txt"
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 model 3" "45 model 2" "100 random 2" > "$O/busy.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/busy.txt"
for r in "${rows[@]}"; do echo "$r"; done
