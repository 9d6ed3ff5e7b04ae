#!/usr/bin/env bash
# bench/tune_fresh.sh: the whole cost of a small search, start included: for each TASK
# name (kernels/NAME.lua), `kloop tune --method exhaustive --budget 30` with an empty
# compile cache, its process wall time, its rate and the summary's time line; one row
# each, every log kept in $OUT/tune_NAME.log.
# usage: bash bench/tune_fresh.sh saxpy stencil
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
for t in "$@"; do
  C=$(mktemp -d)
  s=$(date +%s.%N)
  KLOOP_CACHE=$C $K tune "kernels/$t.lua" --method exhaustive --budget 30 --no-store --profile none --promote off --seed 1 \
    > "$O/tune_$t.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  printf '%-30s %s\n' "tune $t (empty cache)" "exit $rc, process $(awk "BEGIN{printf \"%.2f s\", $e-$s}"): $(grep -E '^run ' "$O/tune_$t.log" | grep -o '[0-9]* candidates in.*')"
  printf '%-30s %s\n' "  time" "$(grep -E '^time:' "$O/tune_$t.log" | cut -c7-170)"
  rm -rf "$C"
done
