#!/usr/bin/env bash
# bench/round3b_gpu.sh: after the library's timing child starts beside the worker, the
# urgent compiles take the first free slot and the time line says what waits were for:
# bench/round3a_gpu.sh's runs again (gemm_tiled random 100, model 100 twice, saxpy), the
# library spec on the GPU (the child's ready/go protocol with real cuBLAS) and a stored
# tune whose library line and stored reference are shown; a table last.
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
build/kloop tests/busted.lua -o utfTerminal tests/spec/library_spec.lua > "$O/library_spec.log" 2>&1
spec="library_spec: $(tail -1 "$O/library_spec.log" | cut -c1-80)"
export KLOOP_CACHE=$T/c2
build/kloop tune kernels/gemm_tiled.lua --budget 8 --seed 1 --db "$T/k.db" --profile none --promote off > "$T/stored.log" 2>&1
lib="exit $? $(grep -E '^library:' "$T/stored.log" | cut -c1-110)"
stored=$(sqlite3 "$T/k.db" "SELECT json_extract(options_json,'\$.library_ms') FROM runs" 2>&1 | head -1)
timeline=$(grep -E '^time:' "$T/stored.log" | cut -c11-200)
OUT=$O bash bench/round3a_gpu.sh > "$T/r3a.txt" 2>&1
printf '%-24s %s\n' "spec" "$spec" "stored tune" "$lib" "  stored library_ms" "$stored" "  time" "$timeline"
cat "$T/r3a.txt"
