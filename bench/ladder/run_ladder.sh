#!/usr/bin/env bash
# bench/ladder/run_ladder.sh: beam with the LLM proposer against the mock server that
# replays a ladder of gemm kernels; each faster verified rung must be promoted.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
python3 tests/mock_llm/server.py --port-file "$tmp/port" --max-seconds 600 >/dev/null 2>&1 &
for i in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
# rung 2: the tiled kernel as shipped; rung 3: the same with the tiling tune found
sed 's/#define BN 64/#define BN 256/; s/#define BM 64/#define BM 128/; s/#define TM 4/#define TM 16/' \
  kernels/gemm_tiled.cu > "$tmp/tiled_tuned.cu"
python3 tests/strategies/script_mock.py "$port" bench/ladder/1_coalesced.cu kernels/gemm_tiled.cu "$tmp/tiled_tuned.cu" >/dev/null
KLOOP_DB="$tmp/ladder.db" build/kloop strategies/beam.lua kernels/gemm.cu --width 1 --expand 1 --budget 3 \
  --model mock-coder --llm-url "http://127.0.0.1:$port/v1" --pipeline=false --no-cache --timing-budget 1 --seed 1
KLOOP_DB="$tmp/ladder.db" build/kloop show 1 | head -20 || true
kill %1 2>/dev/null || true
