#!/usr/bin/env bash
# bench/round2i_gpu.sh: references masked where they are computed and guard zones written
# on the device: the GPU tests that cover them, `kloop check` of every shipped task, and
# the breakdowns' start times.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
for t in compare_device adversarial isolation compare; do
  $K tests/gpu/$t.lua > "$O/t_$t.log" 2>&1
  printf '%-28s exit %s: %s\n' "$t" "$?" "$(tail -1 "$O/t_$t.log" | cut -c1-120)"
done
for t in kernels/*.lua; do
  printf '%-28s %s\n' "check $(basename "$t" .lua)" \
    "$($K check "$t" 2>&1 | grep -E '^(verdict|reason|time) ' | tr -s ' ' | tr '\n' ' ' | cut -c1-150)"
done
bash bench/breakdowns.sh saxpy stencil gemm_tiled
