#!/usr/bin/env bash
# tests/mock_llm/agent_demo.sh: the agent strategy against the mock server scripted with tool calls, on a gemm task,
# then the conversation's shape and the store's rows (read through kloop's own store, no sqlite3 needed).
#
# usage: bash tests/mock_llm/agent_demo.sh KLOOP TASK [openai|anthropic]
#   TASK kernels/gemm.lua (CUDA): task_info, check the coalesced naive kernel, profile the tiled one, a call with bad
#   arguments, a reply with none. Any other task (examples/cpu/sgemm.c): the same with the host ladder's fast kernel.
set -eu
KLOOP=$(readlink -f "$1")
TASK=$2
API=${3:-openai}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
MOCK=
trap '[ -n "$MOCK" ] && kill $MOCK 2>/dev/null; rm -rf "$W"' EXIT
python3 "$SRC/tests/mock_llm/server.py" --port-file "$W/port" --max-seconds 900 >/dev/null 2>&1 &
MOCK=$!
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(cat "$W/port")
case "$TASK" in
  *gemm.lua | *gemm.cu) FIRST="$SRC/bench/candidates/coalesced.cu" SECOND="$SRC/kernels/gemm_tiled.cu" ;;
  *) FIRST="$SRC/tests/strategies/ladder_fast.c" SECOND="$SRC/examples/cpu/sgemm_blocked.c" ;;
esac
python3 - "$PORT" "$API" "$FIRST" "$SECOND" <<'PY'
import json, sys, urllib.request
port, api, first, second = sys.argv[1:5]
bad = '{"source": "extern' if api == "openai" else {"source": 7}
replies = [
    {"text": "The task first.", "tool_calls": [{"name": "task_info"}]},
    {"text": "Coalesce the loads.", "tool_calls": [{"name": "check", "arguments": {"name": "coalesced"}, "source_file": first}]},
    {"text": "Now tile through shared memory.", "tool_calls": [{"name": "profile", "arguments": {"name": "tiled"},
                                                                 "source_file": second}]},
    {"tool_calls": [{"name": "check", "arguments": bad}, {"name": "best", "arguments": {}}]},
    {"text": "The tiled kernel is the best I have."}]
req = urllib.request.Request("http://127.0.0.1:%s/control/script" % port, method="POST",
                             data=json.dumps({"replies": replies, "reset": True}).encode(),
                             headers={"Content-Type": "application/json"})
urllib.request.urlopen(req, timeout=5).read()
PY
if [ "$API" = anthropic ]; then MODEL=anthropic:mock-agent URL=http://127.0.0.1:$PORT; else MODEL=mock-agent URL=http://127.0.0.1:$PORT/v1; fi
set +e
"$KLOOP" agent "$TASK" --model "$MODEL" --llm-url "$URL" --lineages 1 --turns 6 --seed 1 --no-cache \
  --db "$W/kloop.db" > "$W/out" 2> "$W/err"
RC=$?
set -e
grep -E '^(conversation|run|best|baseline|verdicts)' "$W/out" || true
[ "$RC" -eq 0 ] || { echo "exit $RC"; tail -5 "$W/err"; }
KLOOP_DB="$W/kloop.db" "$KLOOP" -e '
local db = assert(require("kloop.store.db").open(os.getenv("KLOOP_DB"), { readonly = true }))
for _, c in ipairs(db:conversations(1)) do
  local shape = {}
  for _, m in ipairs(c.messages) do
    local names = {}
    for _, t in ipairs(type(m.tool_calls) == "table" and m.tool_calls or {}) do names[#names + 1] = t.name end
    shape[#shape + 1] = m.role .. (#names > 0 and "(" .. table.concat(names, ",") .. ")" or "") .. (m.is_error and "!" or "")
  end
  print(string.format("conversation %d: lineage %d, %s, %d turns, tokens %s in / %s out, stop: %s", c.id, c.lineage,
    c.model, c.turns, tostring(c.tokens_in), tostring(c.tokens_out), tostring(c.stop_reason)))
  print("  messages: " .. table.concat(shape, " "))
end
print(string.format("%-4s %-18s %-5s %-8s %-12s %s", "id", "proposer", "conv", "verdict", "median_ms", "profiled"))
for _, c in ipairs(db:candidates(1)) do
  local e = c.evaluation or {}
  print(string.format("%-4d %-18s %-5s %-8s %-12s %s", c.id, c.proposer, tostring(c.conversation_id or "-"),
    tostring(e.verdict), e.time_ms and string.format("%.4f", e.time_ms) or "-", e.profile and "yes" or "no"))
end
local n = db:query("SELECT count(*) AS n, count(candidate_id) AS linked FROM llm_calls WHERE run_id = 1")[1]
print(string.format("llm_calls: %d (%d linked to a candidate)", n.n, n.linked))'
