#!/usr/bin/env bash
# bench/round2n_gpu.sh: the session's last call: the restore from the intact copy of a
# device reference (the adversarial suite, the device comparison), and GPU busy of a
# 100-candidate model search once its guesses predict the pool once.
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
for t in adversarial compare_device; do
  $K tests/gpu/$t.lua > "${OUT:-/tmp}/t_$t.log" 2>&1
  printf '%-28s exit %s: %s\n' "$t" "$?" "$(tail -1 "${OUT:-/tmp}/t_$t.log" | cut -c1-120)"
done
bash bench/tune_busy.sh kernels/gemm_tiled.lua "100 model 1" "100 model 3"
