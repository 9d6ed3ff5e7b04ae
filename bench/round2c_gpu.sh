#!/usr/bin/env bash
# bench/round2c_gpu.sh: round 2's second session on the GPU in one call: doctor, every
# GPU test (A/B against itself 30 times, promotion with compute-sanitizer, isolation,
# profile, ...), a tune run on gemm_tiled with the live report and promotion at the end,
# the agent strategy against the scripted mock LLM on the naive gemm, and kloop mcp's
# compile/check/profile tools on a CUDA task over raw JSON-RPC; a table last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
K=build/kloop
rows=()
row() { rows+=("$(printf '%-28s %s' "$1" "$2")"); }
part=${PART:-all} # tests: doctor and the GPU tests; runs: the searches; all: both
if [ "$part" != runs ]; then
$K doctor 2>&1 | sed -n 1,14p
for t in tests/gpu/*.lua; do
  name=$(basename "$t" .lua)
  s=$(date +%s)
  $K "$t" > "$out/gpu_$name.log" 2>&1; rc=$?
  e=$(date +%s)
  echo "== gpu_$name (exit $rc)"; tail -15 "$out/gpu_$name.log"
  row "gpu_$name" "exit $rc, $((e - s)) s"
done
fi
if [ "$part" != tests ]; then
export KLOOP_DB="$out/gpu.db"
echo "== tune gemm_tiled, budget 45, live report, promotion at the end"
s=$(date +%s)
$K tune kernels/gemm_tiled.lua --budget 45 --timing-budget 0.3 --profile best --seed 1 --report "$out/report.html" > "$out/tune.log" 2>&1; rc=$?
tail -14 "$out/tune.log"
row "tune gemm_tiled 45" "exit $rc, $(( $(date +%s) - s )) s, $(grep -o 'best: .*' "$out/tune.log" | head -1)"
row "promotion" "$(grep -iE 'promoted|refused' "$out/tune.log" | tail -1)"
$K report -o "$out/report_final.html" > /dev/null 2>&1 && row "report" "written ($(wc -c < "$out/report_final.html") bytes)"
$K audit > "$out/audit.txt" 2>&1; row "audit" "exit $?"
echo "== strategy package (examples/strategies/hillclimb) on gemm_tiled, then its files"
D="$out/pkg"; mkdir -p "$D"
KLOOP_DB=$D/k.db KLOOP_PATH=examples/strategies $K hillclimb kernels/gemm_tiled.lua --budget 3 --seed 3 --timing-budget 0.2 --promote off 2>&1 | grep -E '^\[|^run'
KLOOP_DB=$D/k.db $K strategy-files 1 -o "$D/x" 2>&1 | sed "s#$D#D#g"
row "package hillclimb" "$(ls "$D/x" 2>/dev/null | tr '\n' ' ')"
echo "== kloop mcp on kernels/saxpy.lua: compile, check, profile over raw JSON-RPC"
{
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gpu-smoke","version":"1"}}}'
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"compile","arguments":{}}}'
  echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check","arguments":{}}}'
  echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"profile","arguments":{}}}'
} | KLOOP_DB="$out/mcp.db" timeout 300 $K mcp kernels/saxpy.lua > "$out/mcp.out" 2> "$out/mcp.err"
row "mcp exit" "$?"
python3 - "$out/mcp.out" <<'PY' | while IFS= read -r l; do echo "$l"; done
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    r = m.get("result", {})
    sc = r.get("structuredContent") or {}
    print("mcp id", m.get("id"), "error" if "error" in m else ("isError" if r.get("isError") else "ok"),
          sc.get("verdict", ""), sc.get("time_ms", ""), (sc.get("reason") or "")[:80])
PY
echo "== agent strategy, scripted mock (OpenAI tool calls), on the naive gemm"
bash tests/mock_llm/agent_demo.sh "$K" kernels/gemm.lua > "$out/agent.log" 2>&1; rc=$?
tail -25 "$out/agent.log"
row "agent (openai)" "exit $rc; $(grep -m1 -o 'best: .*' "$out/agent.log")"
bash tests/mock_llm/agent_demo.sh "$K" kernels/gemm.lua anthropic > "$out/agent_anthropic.log" 2>&1; rc=$?
row "agent (anthropic)" "exit $rc; $(grep -m1 -o 'best: .*' "$out/agent_anthropic.log")"
fi
echo
echo "== summary"
for r in "${rows[@]}"; do echo "$r"; done
