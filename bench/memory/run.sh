#!/usr/bin/env bash
# bench/memory/run.sh: a 10,000-candidate tune run on a CPU task; prints the peak
# resident memory of the kloop process (target < 200 MB). Takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10000}
tmp=$(mktemp -d)
KLOOP_CACHE="$tmp/cache" /usr/bin/time -v build/kloop strategies/tune.lua bench/memory/tiny.c \
  --budget "$n" --seed 1 --timing-budget 0.001 --quiet --db "$tmp/m.db" 2> "$tmp/time.txt" | tail -4
grep -E "Maximum resident set size" "$tmp/time.txt" | awk '{printf "PEAK RSS: %.1f MB\n", $6/1024}'
sqlite3 "$tmp/m.db" "SELECT 'stored evaluations: ' || count(*) FROM evaluations"
rm -rf "$tmp"
