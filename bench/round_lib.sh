# bench/round_lib.sh: what the one-call GPU scripts of a session share (sourced from the
# repository root): O (the folder that comes back, $OUT), T (scratch, removed at exit), L ($O/all.log, the
# one log: few files come back from the device), rows and row LABEL TEXT (the table printed
# last), and gpu_tests_logged (every GPU test, its table appended to L and kept in T).
O=${OUT:-/tmp}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
L=$O/all.log
: > "$L"
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
gpu_tests_logged() {
  OUT=$T bash bench/gpu_tests.sh > "$T/gpu_tests.txt" 2>&1
  { echo "== GPU tests"; cat "$T/gpu_tests.txt"; } >> "$L"
}
