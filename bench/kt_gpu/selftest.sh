#!/usr/bin/env bash
# bench/kt_gpu/selftest.sh: checks bench/kt_gpu's pieces without a GPU: points.lua refuses
# every malformed or foreign points file with the line at fault and evaluates a good one
# exactly (host task examples/cpu/sgemm_blocked.c); table.py reads those runs; and, given a
# Python with kernel_tuner (KT_PYTHON, e.g. a venv with build/ktwheels installed), that
# tune_kt.py's restated spaces equal kloop's and Kernel Tuner (simulation mode) evaluates
# exactly the points files' points. Exit 0 when every check passes, 1 otherwise.
# Environment: KLOOP (build/kloop), POINTS_LUA (the strategy under test), KT_PYTHON.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
KLOOP=${KLOOP:-build/kloop}
POINTS_LUA=${POINTS_LUA:-bench/kt_gpu/points.lua}
T=$(mktemp -d /tmp/kt_selftest.XXXXXX)
trap '[ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

# points NAME CONTENT: CONTENT with \t and \n written out (printf %b)
points() { printf '%b' "$2" > "$T/$1.tsv"; }
# refuses NAME TARGET EXPECTED: the run exits 1 before evaluating and says EXPECTED, no traceback
refuses() {
  local out rc
  out=$("$KLOOP" "$POINTS_LUA" "$2" --points "$T/$1.tsv" --budget 8 --no-store --promote off --seed 1 2>&1)
  rc=$?
  if [ "$rc" -eq 1 ] && grep -qF -- "$3" <<<"$out" && ! grep -q traceback <<<"$out" && ! grep -q '^\[' <<<"$out"; then
    pass "refuses $1: $3"
  else
    fail "refuses $1: want rc 1 and '$3', got rc $rc: $out"
  fi
}

H=examples/cpu/sgemm_blocked.c
points good 'TI\tTJ\tTK\n# a comment\n8\t32\t16\n\n16 64 32\n32\t128\t64\n'
points badname 'TI\tTJ\tTX\n8\t32\t16\n'
points badvalue 'TI\tTJ\tTK\n8\t33\t16\n'
points dup 'TI\tTJ\tTK\n8\t32\t16\n8 32 16\n'
points missing 'TI\tTJ\n8\t32\n'
points short 'TI\tTJ\tTK\n8\t32\n'
points long 'TI\tTJ\tTK\n8\t32\t16\t4\n'
points twice 'TI\tTJ\tTK\tTI\n8\t32\t16\t8\n'
points empty '# nothing\n'
points cons 'TI\tTJ\tTK\n8\t256\t16\n64\t64\t16\n'
refuses badname $H "line 1: TX is not a parameter of task sgemm_blocked_cpu"
refuses badvalue $H "line 2: TJ=33 is not among the task's values"
refuses dup $H "line 3: TI=8,TJ=32,TK=16 is listed twice"
refuses missing $H "line 1: the header lacks TK"
refuses short $H "line 2: 2 values for 3 names"
refuses long $H "line 2: 4 values for 3 names"
refuses twice $H "line 1: TI is named twice"
refuses empty $H "no points"
refuses nofile $H "No such file"
# a task with a constraint (the host sgemm with one added)
mkdir -p "$T/task"
cp examples/cpu/sgemm_blocked.c examples/cpu/sgemm_ref.c "$T/task/"
sed 's/^  cost = /  constraint = function(p) return p.TI * p.TJ <= 2048 end,\n  cost = /' examples/cpu/sgemm_blocked.lua \
  > "$T/task/sgemm_blocked.lua"
refuses cons "$T/task/sgemm_blocked.c" "line 3: TI=64,TJ=64,TK=16 fails the task's constraint"
out=$("$KLOOP" "$POINTS_LUA" $H --points "$T/good.tsv" --budget 2 --no-store --promote off --seed 1 2>&1)
if [ $? -eq 1 ] && grep -qF -- "--budget 2 is below the 3 points" <<<"$out"; then pass "refuses a budget below the points"
else fail "a budget below the points: $out"; fi

# a good file: exactly its points, in order, then the run ends on its own
mkdir -p "$T/out/points"
cp "$T/good.tsv" "$T/out/points/sgemm_blocked.tsv"
for mode in full cascade; do
  c=off; [ $mode = cascade ] && c=on
  "$KLOOP" "$POINTS_LUA" $H --points "$T/good.tsv" --budget 4 --no-store --profile none --promote off --seed 1 \
    --cascade $c > "$T/out/kloop_sgemm_blocked_$mode.log" 2>&1
  echo "rc $? wall 1.00" > "$T/out/kloop_sgemm_blocked_$mode.wall"
done
log="$T/out/kloop_sgemm_blocked_full.log"
got=$(grep -E '^\[ *[1-9]' "$log" | grep -oE 'TI=[0-9]+ TJ=[0-9]+ TK=[0-9]+' | tr '\n' ';')
if [ "$got" = "TI=8 TJ=32 TK=16;TI=16 TJ=64 TK=32;TI=32 TJ=128 TK=64;" ] \
  && grep -q 'nothing more to propose) on sgemm_blocked_cpu: 3 candidates' "$log"; then
  pass "a good file: its 3 points in order, then the strategy ends"
else
  fail "a good file: got '$got'; $(tail -8 "$log")"
fi
tbl=$(python3 bench/kt_gpu/table.py "$T/out" --tasks sgemm_blocked)
if grep -qE '^sgemm_blocked \| 3 +\| - +\| [0-9.]+ +\| [0-9.]+' <<<"$tbl" && ! grep -q 'not the file' <<<"$tbl"; then
  pass "table.py reads both runs and finds the file's points"
else
  fail "table.py: $tbl"
fi
# table.py notices a run that evaluated other points than the file's
printf 'TI\tTJ\tTK\n8\t32\t16\n16\t64\t32\n64\t64\t16\n' > "$T/out/points/sgemm_blocked.tsv"
tbl=$(python3 bench/kt_gpu/table.py "$T/out" --tasks sgemm_blocked)
if grep -q "not the file's 3 (1 not in it)" <<<"$tbl"; then
  pass "table.py marks a run whose points differ from the file"
else
  fail "table.py did not mark a run with other points"
fi

# tune_kt.py against kloop's own spaces, and KT in simulation mode on the points files
if [ -n "${KT_PYTHON:-}" ]; then
  mkdir -p "$T/spaces"
  for t in gemm_tiled saxpy stencil; do "$KLOOP" bench/kt_gpu/space.lua "kernels/$t.lua" > "$T/spaces/$t.all.tsv"; done
  if "$KT_PYTHON" bench/kt_gpu/tune_kt.py "$T/kt" --kloop-spaces "$T/spaces" --simulate > "$T/kt.log" 2>&1 \
    && "$KT_PYTHON" - "$T/kt/kt_summary.json" <<'EOF'
import json, sys
s = {d["task"]: d for d in json.load(open(sys.argv[1]))}
want = {"gemm_tiled": 74, "saxpy": 5, "stencil": 21}
ok = all(s[t].get("same_points") and s[t]["evaluated"] == n == s[t]["points"] for t, n in want.items())
sys.exit(0 if ok else 1)
EOF
  then pass "KT (simulated) evaluates exactly the points files' points (74, 5, 21)"
  else fail "KT simulated: $(tail -5 "$T/kt.log")"; fi
  out=$("$KT_PYTHON" bench/kt_gpu/tune_kt.py "$T/kt1" --kloop-spaces "$T/spaces" --simulate --gemm-stride 1 \
    --tasks gemm_tiled 2>&1)
  if grep -q '^KT gemm_tiled 444 ' <<<"$out"; then
    pass "KT's restated gemm space is kloop's 444 valid points"
  else fail "KT's gemm space is not kloop's 444 points"; fi
  sed -i '5d' "$T/spaces/stencil.all.tsv"
  if ! "$KT_PYTHON" bench/kt_gpu/tune_kt.py "$T/kt2" --kloop-spaces "$T/spaces" --points-only > "$T/kt2.log" 2>&1 \
    && grep -q 'stencil: the restated space differs from kloop' "$T/kt2.log"; then
    pass "tune_kt.py refuses a space that differs from kloop's"
  else fail "tune_kt.py accepted a space that differs from kloop's: $(cat "$T/kt2.log")"; fi
else
  echo "skip tune_kt.py checks (set KT_PYTHON to a python with kernel_tuner)"
fi

[ "$fails" -eq 0 ] && echo "selftest: all passed" || echo "selftest: $fails failed"
[ "$fails" -eq 0 ]
