# bench/round_lib.sh: what the one-call GPU scripts of a session share (sourced from the
# repository root): O (the folder that comes back, $OUT), T (scratch, removed at exit), L
# ($O/all.log, the one log: few files come back from the device), rows and row LABEL TEXT
# (the table printed last), gpu_tests_logged (every GPU test, its table appended to L and
# kept in T), fresh_cache (an empty compile cache for what runs next) and busy_rows LABEL
# BUDGET OPTIONS... (a gemm_tiled tune under bench/gpu_busy.sh, timing budget 0.3 s and no
# promotion unless OPTIONS say otherwise: its rows, its lines in L, its log as
# $O/tune_LABEL.log; BUSY_TASK names another task); ab_row LABEL BIN NICE OPTIONS... (one run
# of a side-by-side, its thinks and compiles summed); casc_row (an exhaustive tune with options, its stages and best); prev_new SEED... (var/prev_tune.lua
# against the built-in tune, alternated); casc_pairs VARIANT... (stencil and saxpy, full and
# cascade, twice, alternated) and tests_and_kt (every GPU test, then Kernel Tuner).
# The variants under var/ (git-ignored) reach the GPU machine only when the call carries "var".
O=${OUT:-/tmp}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
L=$O/all.log
: > "$L"
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
gpu_tests_logged() {
  timeout 300 env OUT="$T" bash bench/gpu_tests.sh > "$T/gpu_tests.txt" 2>&1
  { echo "== GPU tests"; cat "$T/gpu_tests.txt"; } >> "$L"
}
fresh_cache() { rm -rf "$T/cache"; mkdir -p "$T/cache"; export KLOOP_CACHE=$T/cache; }
busy_rows() {
  local label=$1 budget=$2
  shift 2
  rm -rf "$T"/gpu_busy.*
  OUT=$T bash bench/gpu_busy.sh "${BUSY_TASK:-kernels/gemm_tiled.lua}" "$budget" --timing-budget 0.3 --promote off "$@" \
    > "$T/busy.log" 2>&1
  local log
  log=$(ls "$T"/gpu_busy.*/tune.log 2>/dev/null | head -1)
  [ -n "$log" ] || log=/dev/null
  row "$label" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -E '^time:' "$log" | cut -c11-260)"
  row "  waits, best" "$(grep -E '^waits:' "$log" | cut -c11-130); $(grep -E '^best:' "$log" | cut -c11-100)"
  { echo "== $label: ${rows[-3]}"; grep -E '^(time|waits|best|library):' "$log"; } >> "$L"
  [ "$log" = /dev/null ] || cp "$log" "$O/tune_${label//[^A-Za-z0-9_.-]/_}.log"
  rm -rf "$T"/gpu_busy.*
}
# use_bin old|new|var: which kloop runs next (K, and KLOOP for bench/gpu_busy.sh): old is
# build/old/kloop on its own embedded Lua (a commit before, built by hand), new is
# build/kloop, var is build/kloop on the Lua in $VARIANT (a copy of lua/ with one change)
use_bin() {
  unset KLOOP_EMBEDDED_ONLY KLOOP_LUA_DIR
  case $1 in
    old) export KLOOP_EMBEDDED_ONLY=1 K=build/old/kloop ;;
    var) export KLOOP_LUA_DIR=$PWD/${VARIANT:?VARIANT names the variant Lua} K=build/kloop ;;
    *) K=build/kloop ;;
  esac
  export KLOOP=$K
}
# waits_begin: a fresh KLOOP_WAITS_LOG for the next run; waits_logged: its waits (time
# since the worker's start, then the line) appended to L, and the log closed
waits_begin() { export KLOOP_WAITS_LOG=$T/waits.log; rm -f "$KLOOP_WAITS_LOG"; }
waits_logged() {
  awk '$2 == "start" && !t0 {t0 = $1} $2 == "wait" {printf "  at %.2f s: %s\n", $1 - t0, substr($0, index($0, "wait") + 5)}' \
    "$KLOOP_WAITS_LOG" >> "$L" 2>/dev/null
  unset KLOOP_WAITS_LOG
}
# micro_row LABEL TASK BUDGET: `tune --method exhaustive` of kernels/TASK.lua with $K on
# an empty compile cache: its summary and process time as a row, its time line in L
micro_row() {
  fresh_cache
  local s e
  s=$(date +%s.%N)
  $K tune "kernels/$2.lua" --method exhaustive --budget "$3" --no-store --profile none --promote off --seed 1 > "$T/t.log" 2>&1
  e=$(date +%s.%N)
  row "$1" "$(grep -E '^run ' "$T/t.log" | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s"
  { echo "== $1: ${rows[-1]}"; grep -E '^time:' "$T/t.log"; } >> "$L"
}
# micro_waits LABEL TASK BUDGET: micro_row with a fresh KLOOP_WAITS_LOG, kept as
# $O/waits_LABEL.log (the variable left set: the caller reads the log, then unsets it)
micro_waits() {
  waits_begin
  micro_row "$1" "$2" "$3"
  cp "$KLOOP_WAITS_LOG" "$O/waits_$1.log"
}
# micro_side_by_side: saxpy (6) and stencil (22) exhaustive, twice each, old and new
# alternated (micro_row), new in use after
micro_side_by_side() {
  local t i b
  for t in saxpy:6 stencil:22; do
    for i in 1 2; do
      for b in old new; do
        use_bin $b
        micro_row "${t%%:*}$i $b" "${t%%:*}" "${t##*:}"
      done
    done
  done
  use_bin new
}
# ab_row LABEL BIN NICE OPTIONS...: one run of a side-by-side (busy_rows, budget 100) with
# use_bin BIN, an empty compile cache, KLOOP_COMPILE_NICE=NICE where NICE is not empty,
# its thinks and background compiles summed (rows and L), its waits logged
ab_row() {
  local label=$1 bin=$2 nice=$3
  shift 3
  use_bin "$bin"
  fresh_cache
  waits_begin
  if [ -n "$nice" ]; then export KLOOP_COMPILE_NICE=$nice; else unset KLOOP_COMPILE_NICE; fi
  busy_rows "$label" 100 "$@"
  unset KLOOP_COMPILE_NICE
  local th co
  th=$(awk '$2 == "think" {n++; s += $3; if ($3 > m) m = $3} END {printf "%d, %.2f s, max %.3f", n, s, m}' "$KLOOP_WAITS_LOG")
  co=$(awk '$2 == "compiled" {n++; if ($7 == "true") {u++; if ($5 > qu) qu = $5} else {g++}} END {printf "%d (urgent %d, most queued %.2f s; guesses %d)", n, u, qu, g}' "$KLOOP_WAITS_LOG")
  { echo "== thinks $label: $th"; echo "== compiles $label: $co"; } >> "$L"
  row "  thinks, compiles" "$th; $co"
  waits_logged
}
# prev_new SEED...: for each seed, gemm_tiled model 100 (ab_row) with the strategy in
# var/prev_tune.lua (BUSY_STRATEGY: a commit's strategies/tune.lua, made by the caller),
# labelled prev, then with the built-in tune, labelled new
prev_new() {
  local seed v
  for seed in "$@"; do
    for v in prev new; do
      if [ $v = prev ]; then export BUSY_STRATEGY=var/prev_tune.lua; else unset BUSY_STRATEGY; fi
      ab_row "model$seed $v" new "" --method model --seed "$seed"
      unset BUSY_STRATEGY
    done
  done
}
# gaps_row LOG LABEL: bench/request_gaps.py's split of LOG (a KLOOP_WAITS_LOG) as a row,
# the whole of it in L; KEEP_WAITS=1 appends the logs of the new model runs to $O/waits_new.log
gaps_row() {
  { echo "== gaps $2"; python3 bench/request_gaps.py "$1"; } >> "$L" 2>&1
  row "  gaps" "$(python3 bench/request_gaps.py "$1" | grep -E '^(GAPS|  plain gaps)' | sed 's/^GAPS: //; s/^  plain gaps split: /split: /' | tr '\n' ' ' | cut -c1-290)"
  if [ -n "${KEEP_WAITS:-}" ]; then case $2 in model*new) cat "$1" >> "$O/waits_new.log" ;; esac; fi
}
# old_new_gaps SEED...: gemm_tiled model 100 for each seed, then stencil 22 twice, each with
# build/old/kloop then build/kloop (ab_row, micro_row), every run's requests split (gaps_row)
old_new_gaps() {
  local seed b i
  for seed in "$@"; do
    for b in old new; do
      ab_row "model$seed $b" "$b" "" --method model --seed "$seed"
      gaps_row "$T/waits.log" "model$seed $b"
    done
  done
  for i in 1 2; do
    for b in old new; do
      use_bin $b
      waits_begin
      micro_row "stencil$i $b" stencil 22
      gaps_row "$KLOOP_WAITS_LOG" "stencil$i $b"
      unset KLOOP_WAITS_LOG
    done
  done
}
# old_new_spills SEED...: gemm_tiled model 100 for each seed with build/old/kloop and its
# strategy in var/old_tune.lua (a commit's strategies/tune.lua, made by the caller), then
# with build/kloop (ab_row), alternated; each run's waits over 0.3 s and its spills as a row
old_new_spills() {
  [ -f var/old_tune.lua ] || { echo "var/old_tune.lua is missing"; exit 1; }
  local seed b
  for seed in "$@"; do
    for b in old new; do
      if [ $b = old ]; then export BUSY_STRATEGY=var/old_tune.lua; else unset BUSY_STRATEGY; fi
      ab_row "model${seed}$b" $b "" --method model --seed "$seed"
      unset BUSY_STRATEGY
      row "  long waits, spills" "$(awk '$2 == "wait" && $3 > 0.3 {printf "%s ", $3}' "$T/waits.log"); $(grep -c ' spilled ' "$T/waits.log")"
    done
  done
}
# pick new|NAME: build/kloop on its own Lua (new), or on var/NAME's (use_bin var)
pick() { if [ "$1" = new ]; then use_bin new; else VARIANT=var/$1 use_bin var; fi; }
# casc_row LABEL VARIANT TASK BUDGET OPTIONS...: `tune --method exhaustive` of
# kernels/TASK.lua with pick VARIANT on an empty compile cache, OPTIONS added (--cascade
# on, a margin): its summary, process time, verdicts, stages and best as rows, in L too
casc_row() {
  local label=$1 v=$2 task=$3 budget=$4 s e
  shift 4
  pick "$v"
  fresh_cache
  s=$(date +%s.%N)
  $K tune "kernels/$task.lua" --method exhaustive --budget "$budget" --no-store --profile none --promote off --seed 1 "$@" > "$T/t.log" 2>&1
  e=$(date +%s.%N)
  row "$label" "$(grep -E '^run ' "$T/t.log" | sed 's/.*on //' | cut -c1-60) process $(awk "BEGIN{printf \"%.2f\", $e-$s}") s"
  row "  stages, best" "$(grep -E '^verdicts:' "$T/t.log" | cut -c11-60); $(grep -E '^stages:' "$T/t.log" | cut -c9-60); $(grep -E '^best:' "$T/t.log" | cut -c11-100)"
  { echo "== $label: ${rows[-2]}"; grep -E '^(time|stages|best):' "$T/t.log"; } >> "$L"
}
# casc_pairs VARIANT...: stencil 22 and saxpy 6 exhaustive, full and cascade (casc_row),
# twice each, the VARIANTs (pick: new, or a folder under var/) alternated
casc_pairs() {
  local i t v
  for i in 1 2; do
    for t in stencil:22 saxpy:6; do
      for v in "$@"; do
        casc_row "${t%%:*}$i full $v" "$v" "${t%%:*}" "${t##*:}"
        casc_row "${t%%:*}$i casc $v" "$v" "${t%%:*}" "${t##*:}" --cascade on
      done
    done
  done
}
# tests_and_kt: every GPU test with build/kloop (gpu_tests_logged, a row of how many
# passed), then Kernel Tuner and kloop on all three spaces (bench/kt_gpu/run.sh, its log
# in $T/kt.txt); both in L
tests_and_kt() {
  gpu_tests_row
  kt_logged
}
# kt_logged: Kernel Tuner and kloop on all three spaces (bench/kt_gpu/run.sh), its log in
# $T/kt.txt and in L
kt_logged() {
  use_bin new
  OUT=$T/kt timeout 300 bash bench/kt_gpu/run.sh > "$T/kt.txt" 2>&1
  { echo "== KT bench"; cat "$T/kt.txt"; } >> "$L"
}
# gpu_tests_row: every GPU test with build/kloop (gpu_tests_logged) and a row of how many passed
gpu_tests_row() {
  use_bin new
  gpu_tests_logged
  row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
}
# cost_pairs TASKS VARIANT...: bench/worker_cost.lua (30 evaluations, 5 repetitions) on each
# of TASKS (names under kernels/, space-separated), twice, the VARIANTs (pick) alternated:
# a row each, the whole output in L
cost_pairs() {
  local tasks=$1 t k v out
  shift
  for t in $tasks; do
    for k in 1 2; do
      for v in "$@"; do
        pick "$v"
        fresh_cache
        out=$(timeout 60 $K bench/worker_cost.lua "kernels/$t.lua" 30 5 2>&1)
        echo "== $t $v $k: $out" >> "$L"
        row "$t $v $k" "$(echo "$out" | grep '^WORKER_COST' | sed 's/.*repetitions: //' | cut -c1-120)"
      done
    done
  done
}
# check_device_rows VARIANT...: tests/gpu/check_device.lua with each VARIANT (pick): its
# exit code, how many FAIL lines and the first verdict line as a row, its output in L
check_device_rows() {
  local m rc
  for m in "$@"; do
    pick "$m"
    timeout 120 $K tests/gpu/check_device.lua > "$T/cd.txt" 2>&1
    rc=$?
    { echo "== check_device $m: exit $rc"; cat "$T/cd.txt"; } >> "$L"
    row "check_device $m" "exit $rc: $(grep -c '^FAIL' "$T/cd.txt") FAIL lines; $(grep -E '^(FAIL|PASS)' "$T/cd.txt" | head -1 | cut -c1-140)"
  done
}
