#!/usr/bin/env bash
# tools/quickstart.sh: the main job on a fresh machine. Installs what is missing and
# builds (tools/setup.sh), checks each component (kloop doctor), runs a real search with
# no model configured on a shipped task, and writes the run's process report:
#   - with an NVIDIA GPU: tune's learning search over kernels/gemm_tiled.lua (CUDA);
#   - without one: the same search over examples/cpu/sgemm_blocked.c in the host sandbox.
# Then it prints the best candidate and where the report is.
# Options (environment): KLOOP_DB (default ./kloop.db), KLOOP_REPORT (default
# ./kloop-report.html), BUDGET (candidates; default 45 on a GPU, 24 on the CPU), SEED (1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
K=build/kloop
export KLOOP_DB=${KLOOP_DB:-$PWD/kloop.db}
report=${KLOOP_REPORT:-$PWD/kloop-report.html}
seed=${SEED:-1}
# doctor says what works here; a missing GPU or model is information, not a failure
"$K" doctor || true
if "$K" -e 'os.exit(require("kloop.core.gpu").probe() and 0 or 1)' 2>/dev/null; then
  task=kernels/gemm_tiled.lua budget=${BUDGET:-45}
  echo "quickstart: a GPU is here: searching the CUDA task $task"
else
  task=examples/cpu/sgemm_blocked.c budget=${BUDGET:-24}
  echo "quickstart: no GPU here: searching the C task $task in the host sandbox"
fi
"$K" tune "$task" --budget "$budget" --seed "$seed"
"$K" best
"$K" report -o "$report"
echo "quickstart: the run is in $KLOOP_DB; its report is $report (open it in a browser)"
