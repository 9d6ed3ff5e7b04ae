#!/usr/bin/env bash
# bench/gpu_busy.sh: how busy the GPU is during a tune run. nvidia-smi samples
# utilization.gpu (the share of each sample period in which a kernel ran) every 100 ms
# while `kloop tune` runs; the figure is the mean of the samples taken within the run's
# wall time.
# usage: bench/gpu_busy.sh [TASK] [BUDGET] [extra kloop options...]
# (BUSY_STRATEGY=FILE: another copy of the tune strategy, for side-by-side benches;
# KEEP_SMI=FILE: the samples kept there, after a line "# t0 WALL MONO": the run's start by
# the wall clock and by /proc/uptime, the clock of KLOOP_WAITS_LOG's lines, to line them up)
set -u
KLOOP=${KLOOP:-build/kloop}
TASK=${1:-kernels/gemm_tiled.lua}
BUDGET=${2:-40}
shift 2 2>/dev/null || shift $#
OUTD=${OUT:-/tmp}/gpu_busy.$$
mkdir -p "$OUTD"
command -v nvidia-smi >/dev/null || { echo "SKIP: no nvidia-smi"; exit 77; }
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$OUTD/smi.csv" &
SMI=$!
sleep 0.5
t0=$(date +%s.%N)
mono0=$(cut -d' ' -f1 /proc/uptime)
"$KLOOP" "${BUSY_STRATEGY:-tune}" "$TASK" --budget "$BUDGET" --no-store --profile none "$@" >"$OUTD/tune.log" 2>&1
rc=$?
t1=$(date +%s.%N)
sleep 0.3
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
[ -n "${KEEP_SMI:-}" ] && { echo "# t0 $t0 $mono0"; cat "$OUTD/smi.csv"; } > "$KEEP_SMI"
tail -5 "$OUTD/tune.log"
# the mean over the samples taken within the run's wall time (t0, t1]; and, as rounds
# before session 19 counted it, over every sample after the first six (the 0.5 s before
# the run, one more), those taken in the 0.3 s after it included
python3 - "$OUTD/smi.csv" "$t0" "$t1" <<'PY'
import datetime, sys
rows = [l.split(", ") for l in open(sys.argv[1]).read().splitlines()]
rows = [r for r in rows if len(r) == 2]
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
inside, late = [], [float(r[1]) for r in rows[6:]]
for ts, u in rows:
    t = datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp()  # (the machine's local time)
    if t0 < t <= t1:
        inside.append(float(u))
if inside:
    print("GPU_BUSY: %.1f%% mean utilization.gpu over %d samples in the run (%.1f%% over %d after the first six)"
          % (sum(inside) / len(inside), len(inside), sum(late) / max(1, len(late)), len(late)))
PY
awk -v a="$t0" -v b="$t1" -v n="$BUDGET" 'BEGIN {printf "WALL: %.1f s for %d candidates (%.1f/min)\n", b-a, n, 60*n/(b-a)}'
exit $rc
