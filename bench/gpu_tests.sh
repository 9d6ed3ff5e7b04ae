#!/usr/bin/env bash
# bench/gpu_tests.sh: every GPU test (tests/gpu/*.lua), or the FILEs given, run with
# build/kloop on this machine: a row each with its exit code, time and last line; each
# log kept in $OUT/t_NAME.log.
# usage: bash bench/gpu_tests.sh [FILE...]
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
[ $# -gt 0 ] || set -- tests/gpu/*.lua
for f in "$@"; do
  t=$(basename "$f" .lua)
  s=$(date +%s.%N)
  timeout -s INT -k 10 170 $K "$f" > "$O/t_$t.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  printf '%-30s %s\n' "gpu $t" "exit $rc $(awk "BEGIN{printf \"%.1f s\", $e-$s}"): $(tail -1 "$O/t_$t.log" | cut -c1-110)"
done
