#!/usr/bin/env bash
# bench/kt_gpu/run.sh: kloop against Kernel Tuner on the same points of kloop's own CUDA
# tasks (gemm_tiled: every GEMM_STRIDE-th valid point; saxpy: the block size; stencil:
# all valid points), on one GPU; prints a table of configurations per minute last.
# Run from anywhere on the GPU machine, with build/kloop built and build/ktwheels
# fetched (bench/kt_gpu/fetch_wheels.sh); writes logs and JSON under $OUT.
# Environment: OUT (default /tmp/kt_gpu), KLOOP (build/kloop), PYTHON (python3: the one
# with cupy, numpy and scipy), GEMM_STRIDE (6), TASKS (gemm_tiled,saxpy,stencil),
# STEP_TIMEOUT (seconds for Kernel Tuner on all tasks, and for each kloop run: 240);
# KT_SIMULATE=1 runs KT in simulation mode on made-up times (no cupy needed: a check of
# the plumbing, not a measurement).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/kt_gpu}
KLOOP=${KLOOP:-build/kloop}
PY=${PYTHON:-python3}
GEMM_STRIDE=${GEMM_STRIDE:-6}
TASKS=${TASKS:-gemm_tiled,saxpy,stencil}
STEP_TIMEOUT=${STEP_TIMEOUT:-240}
HERE=bench/kt_gpu
die() { echo "run.sh: $*" >&2; exit 1; }
[ -x "$KLOOP" ] || die "$KLOOP is missing: build kloop first (and carry build/kloop)"
ls build/ktwheels/kernel_tuner-*.whl >/dev/null 2>&1 || die "build/ktwheels is missing: run $HERE/fetch_wheels.sh (and carry it)"
mkdir -p "$OUT/spaces" "$OUT/points"
# scratch (the installed packages, compile caches) outside $OUT: only results travel back
WORK=$(mktemp -d /tmp/kt_gpu_work.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
t_all=$(date +%s)

# Kernel Tuner and its dependencies into a folder of their own, with no index and no
# dependency resolution: KT's metadata asks for pandas and pymoo, which it imports only
# off our path. (Not a venv: one made with --system-site-packages from inside the
# machine's venv sees the base interpreter's packages, not that venv's cupy and numpy.)
KTLIB="$WORK/ktlib"
rm -rf "$KTLIB"
"$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$KTLIB" build/ktwheels/*.whl \
  || die "installing build/ktwheels failed"
export PYTHONPATH="$KTLIB${PYTHONPATH:+:$PYTHONPATH}"
SIM=()
if [ "${KT_SIMULATE:-0}" = 1 ]; then
  SIM=(--simulate)
  "$PY" -c 'import kernel_tuner' || die "kernel_tuner does not import with $PY"
else
  "$PY" -c 'import kernel_tuner, cupy, numpy, scipy, importlib.metadata as m
print("python ok: kernel_tuner %s, cupy %s, numpy %s, scipy %s" % (m.version("kernel_tuner"), cupy.__version__, numpy.__version__, scipy.__version__))' \
    || die "kernel_tuner or cupy does not import with $PY"
fi

# kloop's own lists of the spaces: tune_kt.py checks its restatement against them
for t in ${TASKS//,/ }; do
  "$KLOOP" "$HERE/space.lua" "kernels/$t.lua" > "$OUT/spaces/$t.all.tsv" || die "space.lua failed on $t"
done

# fresh compile caches for every tool and run: no run reuses another's binaries
fresh_cache() { rm -rf "$1"; mkdir -p "$1"; }

echo "== Kernel Tuner (brute_force, cupy, 7 iterations), one process per task"
# (a process per task, so each has a process wall time as kloop's runs do: Python's
# start, the imports, the arguments drawn, CuPy's context, the search)
rm -f "$OUT/kt_summary.json" "$OUT/kt.log"
for t in ${TASKS//,/ }; do
  fresh_cache "$WORK/cupy_cache"
  s=$(date +%s.%N)
  CUPY_CACHE_DIR="$WORK/cupy_cache" timeout -s INT -k 20 "$STEP_TIMEOUT" \
    "$PY" "$HERE/tune_kt.py" "$OUT" --kloop-spaces "$OUT/spaces" --gemm-stride "$GEMM_STRIDE" --tasks "$t" "${SIM[@]}" \
    2>&1 | tee -a "$OUT/kt.log"
  rc=${PIPESTATUS[0]}
  e=$(date +%s.%N)
  echo "rc $rc wall $(awk "BEGIN { printf \"%.2f\", $e - $s }")" > "$OUT/kt_$t.wall"
done
[ -s "$OUT/points/${TASKS%%,*}.tsv" ] || die "tune_kt.py wrote no points files"

# kloop: the full protocol, then the cascade (screening first); exhaustive tune where
# the task's whole space is the points (stencil), the points strategy otherwise
for t in ${TASKS//,/ }; do
  pts="$OUT/points/$t.tsv"
  n=$(($(grep -vc '^#' "$pts") - 1))
  for mode in full cascade; do
    cascade=off
    [ "$mode" = cascade ] && cascade=on
    if [ "$t" = stencil ]; then
      strat=(tune "kernels/$t.lua" --method exhaustive)
    else
      strat=("$HERE/points.lua" "kernels/$t.lua" --points "$pts")
    fi
    echo "== kloop $t $mode ($n points)"
    fresh_cache "$WORK/kloop_cache"
    s=$(date +%s.%N)
    KLOOP_CACHE="$WORK/kloop_cache" timeout -s INT -k 20 "$STEP_TIMEOUT" "$KLOOP" "${strat[@]}" \
      --budget "$((n + 1))" --no-store --profile none --promote off --seed 1 --cascade "$cascade" \
      > "$OUT/kloop_${t}_$mode.log" 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "rc $rc wall $(awk "BEGIN { printf \"%.2f\", $e - $s }")" > "$OUT/kloop_${t}_$mode.wall"
    grep -E '^(run |verdicts|stages|best:|points:)' "$OUT/kloop_${t}_$mode.log"
    [ "$rc" -eq 0 ] || { echo "kloop exited $rc; the log's end:"; tail -5 "$OUT/kloop_${t}_$mode.log"; }
  done
done

echo "== total $(( $(date +%s) - t_all )) s"
"$PY" "$HERE/table.py" "$OUT" --tasks "$TASKS" | tee "$OUT/table.txt"
