#!/usr/bin/env bash
# bench/round2o_gpu.sh: the session's first call: every GPU test on the code as it
# stands, where a microsecond task's fixed cost goes (the probe, the process, the
# worker's start), and GPU busy of gemm_tiled tune runs; a table last.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-30s %s' "$1" "$2")"); }
for f in tests/gpu/*.lua; do
  t=$(basename "$f" .lua)
  s=$(date +%s.%N)
  timeout -s INT -k 10 170 $K "$f" > "$O/t_$t.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  row "gpu $t" "exit $rc $(awk "BEGIN{printf \"%.1f s\", $e-$s}"): $(tail -1 "$O/t_$t.log" | cut -c1-100)"
done
# the probe alone, and a process that probes and stops
for i in 1 2; do
  s=$(date +%s.%N); $K version > /dev/null 2>&1; e=$(date +%s.%N)
  row "kloop version ($i)" "$(awk "BEGIN{printf \"%.3f s\", $e-$s}")"
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
OUT=$O bash bench/breakdowns.sh saxpy stencil > "$O/bd.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/bd.txt"
OUT=$O bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 random 2" > "$O/busy.txt" 2>&1
while IFS= read -r l; do rows+=("$l"); done < "$O/busy.txt"
for r in "${rows[@]}"; do echo "$r"; done
