#!/usr/bin/env bash
# bench/round2p_gpu.sh: inputs drawn on the device (the fill's bits against the host's,
# every GPU test, kloop check of every shipped task), the start-up that saves, and GPU
# busy of gemm_tiled tune runs once the model favours its guess; a table last.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-30s %s' "$1" "$2")"); }
for f in tests/gpu/fill_device.lua tests/gpu/*.lua; do
  t=$(basename "$f" .lua)
  [ "$f" != tests/gpu/fill_device.lua ] && [ "$t" = fill_device ] && continue
  s=$(date +%s.%N)
  timeout -s INT -k 10 170 $K "$f" > "$O/t_$t.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  row "gpu $t" "exit $rc $(awk "BEGIN{printf \"%.1f s\", $e-$s}"): $(tail -1 "$O/t_$t.log" | cut -c1-110)"
done
row "  fill speed" "$(grep -h '^fill of' "$O/t_fill_device.log")"
for t in axpy_tmpl conv2d gemm gemm_tiled haxpy reduce saxpy stencil transpose; do
  timeout -s INT -k 10 120 $K check kernels/$t.lua > "$O/check_$t.log" 2>&1
  row "check $t" "exit $? $(grep -h -E '^(verdict|time) ' "$O/check_$t.log" | tr -s ' ' | cut -c1-60 | tr '\n' ' ')"
done
for t in saxpy stencil; do
  C=$(mktemp -d)
  s=$(date +%s.%N)
  KLOOP_CACHE=$C $K tune kernels/$t.lua --method exhaustive --budget 30 --no-store --profile none --promote off --seed 1 > "$O/tune_$t.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  row "tune $t (empty cache)" "exit $rc, process $(awk "BEGIN{printf \"%.2f s\", $e-$s}"): $(grep -E '^run ' "$O/tune_$t.log" | grep -o '[0-9]* candidates in.*')"
  row "  time" "$(grep -E '^time:' "$O/tune_$t.log" | cut -c7-170)"
  rm -rf "$C"
done
OUT=$O bash bench/breakdowns.sh saxpy stencil gemm_tiled > "$O/bd.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/bd.txt"
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 model 3" "45 model 2" "100 random 2" > "$O/busy.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/busy.txt"
for r in "${rows[@]}"; do echo "$r"; done
