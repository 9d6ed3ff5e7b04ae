#!/usr/bin/env bash
# bench/profile_vs_ncu.sh: kloop's CUPTI metrics against ncu's for the same kernels at the
# bench size (ncu --clock-control none profiles the kloop worker's launches of the entry).
# Needs the GPU and ncu. usage: bash bench/profile_vs_ncu.sh [OUTDIR] [TASK:ENTRY ...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/kloop-profile-ncu}
shift || true
mkdir -p "$out"
K=build/kloop
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(kernels/gemm.cu:gemm kernels/gemm_tiled.cu:gemm kernels/saxpy.cu:saxpy)
metrics=$($K -e 'local p=require("kloop.eval.profile"); local l=p.metric_list(); io.write(table.concat(l, ","))')
for t in "${tasks[@]}"; do
  file=${t%%:*}; entry=${t#*:}; name=$(basename "$file" .cu)
  $K profile "$file" --json > "$out/$name.kloop.json"
  ncu --clock-control none --target-processes all -k regex:"^${entry}\$" --metrics "$metrics" \
      --csv $K check "$file" --json --budget 0.1 > "$out/$name.ncu.csv" 2>"$out/$name.ncu.err" || true
  python3 - "$name" "$out" "$metrics" <<'PY'
import csv, json, statistics, sys
name, out, metrics = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
k = json.load(open(f"{out}/{name}.kloop.json"))
km = (k.get("profile") or {}).get("metrics") or {}
rows = [r for r in csv.DictReader([l for l in open(f"{out}/{name}.ncu.csv") if l.startswith('"')])]
by_launch = {}
for r in rows:
    by_launch.setdefault(r["ID"], {})[r["Metric Name"]] = (r["Metric Unit"], r["Metric Value"])
def to_base(unit, v):
    v = float(v.replace(",", ""))
    scale = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6,
             "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9, "cycle/second": 1, "cycle/nsecond": 1e9,
             "cycle/usecond": 1e6, "Kcycle/second": 1e3, "Mcycle/second": 1e6, "Ghz": 1e9, "Mhz": 1e6, "hz": 1}.get(unit, 1)
    return v * scale
launches = [{m: to_base(*vals) for m, vals in l.items()} for l in by_launch.values()]
dur = "gpu__time_duration.sum"
big = [l for l in launches if dur in l and l[dur] > 0.5 * max(x.get(dur, 0) for x in launches)]
print(f"== {name}: kloop {k['verdict']} {k.get('time_ms', 0):.4f} ms; ncu: {len(big)} bench-size launches of {len(launches)}")
print(f"{'metric':<64} {'kloop':>16} {'ncu':>16} {'diff':>8}")
worst = 0
for m in metrics:
    vals = [l[m] for l in big if m in l]
    if not vals or m not in km:
        print(f"{m:<64} {km.get(m, float('nan')):>16.6g} {'-':>16}"); continue
    n = statistics.median(vals); kv = km[m]
    d = (kv - n) / n * 100 if n else (0.0 if kv == 0 else float("inf"))
    if abs(n) > 0 or abs(kv) > 0: worst = max(worst, abs(d)) if abs(n) > 1e-9 and not (m.endswith(".sum") and n < 1e3) else worst
    print(f"{m:<64} {kv:>16.6g} {n:>16.6g} {d:>7.2f}%")
print(f"worst difference (counts >= 1000, rates): {worst:.2f}%")
PY
done
