#!/usr/bin/env bash
# bench/timing_fidelity.sh: kloop's median against ncu's gpu__time_duration for the same
# kernels at the bench size, and the spread between two kloop runs. Needs the GPU and ncu.
# usage: bash bench/timing_fidelity.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/kloop-fidelity}
mkdir -p "$out"
K=build/kloop
printf '%-12s %12s %12s %12s %9s %9s\n' kernel kloop_ms kloop2_ms ncu_ms diff run2
for c in naive:kernels/gemm.cu naive32:bench/candidates/naive32.cu coalesced:bench/candidates/coalesced.cu tiled:kernels/gemm_tiled.cu; do
  name=${c%%:*}; file=${c#*:}
  $K check kernels/gemm.cu --candidate "$file" --json > "$out/$name.1.json"
  $K check kernels/gemm.cu --candidate "$file" --json > "$out/$name.2.json"
  # ncu profiles the worker process; only the gemm launches, timed with caches flushed
  ncu --clock-control none --target-processes all -k regex:'^gemm$' --metrics gpu__time_duration.sum \
      --csv $K check kernels/gemm.cu --candidate "$file" --json --budget 0.5 > "$out/$name.ncu.csv" 2>"$out/$name.ncu.err" || true
  python3 - "$name" "$out" <<'PY'
import csv, json, statistics, sys
name, out = sys.argv[1], sys.argv[2]
r1 = json.load(open(f"{out}/{name}.1.json")); r2 = json.load(open(f"{out}/{name}.2.json"))
vals = []
lines = [l for l in open(f"{out}/{name}.ncu.csv") if l.startswith('"')]
for row in csv.DictReader(lines):
    if row.get("Metric Name") == "gpu__time_duration.sum":
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "")
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}.get(unit, 1e-6)
        vals.append(v * scale)
big = [v for v in vals if vals and v > 0.5 * max(vals)]  # bench-size launches
ncu = statistics.median(big) if big else float("nan")
k1, k2 = r1.get("time_ms", float("nan")), r2.get("time_ms", float("nan"))
print(f"{name:<12} {k1:12.4f} {k2:12.4f} {ncu:12.4f} {100*(k1-ncu)/ncu:8.2f}% {100*(k2-k1)/k1:8.2f}%   ({r1['verdict']}, {len(big)} ncu launches)")
PY
done
