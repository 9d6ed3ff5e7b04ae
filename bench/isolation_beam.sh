#!/usr/bin/env bash
# bench/isolation_beam.sh: a beam run on the GPU against the scripted mock LLM whose first
# reply overruns its output (off-by-one row), followed by two correct, faster kernels:
# the overrun must get out_of_bounds and the fastest correct kernel must be the best.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
python3 tests/mock_llm/server.py --port-file "$tmp/port" --max-seconds 600 >/dev/null 2>&1 &
for i in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
python3 tests/strategies/script_mock.py "$port" bench/candidates/coalesced_overrun.cu bench/ladder/1_coalesced.cu \
  kernels/gemm_tiled.cu >/dev/null
export KLOOP_DB="$tmp/iso.db"
build/kloop strategies/beam.lua kernels/gemm.cu --width 1 --expand 1 --budget 3 --model mock-coder \
  --llm-url "http://127.0.0.1:$port/v1" --pipeline=false --no-cache --timing-budget 1 --seed 1 --profile none
build/kloop show 1 --json | python3 -c "
import json, sys
r = json.load(sys.stdin)
cands = r.get('candidates', r) if isinstance(r, dict) else r
oob = 0
for c in cands:
    e = (c.get('evaluations') or [{}])[-1]
    oob += e.get('verdict') == 'out_of_bounds'
    print(c['id'], e.get('verdict'), e.get('median_ms'), (e.get('reason') or '')[:110])
open('$tmp/oob', 'w').write(str(oob))
"
best=$(build/kloop best --json | python3 -c "import json,sys; r=json.load(sys.stdin); print('tiled' in r['source'].lower() and 'overrun' not in r['source'])")
oob=$(cat "$tmp/oob")
kill %1 2>/dev/null || true
echo "ISOLATION BEAM: out_of_bounds=$oob best_is_tiled=$best"
[ "$oob" = 1 ] && [ "$best" = True ]
