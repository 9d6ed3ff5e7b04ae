The agent strategy (strategies/agent.lua): a tool-calling model works in one conversation
per lineage with kloop's tools, against the mock server scripted with tool calls in both
vendors' formats (a check call with a kernel, a profile call, a call with bad arguments,
a reply with no tool call), on a host task from examples/cpu; the store rows by SQL.

  $ kloop() { "$KLOOP" "$@"; }
  $ unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ M="$KLOOP_SRC/tests/mock_llm/server.py"; SG="$KLOOP_SRC/examples/cpu/sgemm.c"
  $ python3 "$M" --port-file port --max-seconds 200 >/dev/null 2>&1 &
  $ for i in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  $ cat > script.py <<'PY'
  > import json, sys, urllib.request
  > port, api, src = sys.argv[1:4]
  > fast, wrong = src + "/tests/strategies/ladder_fast.c", src + "/tests/strategies/ladder_wrong.c"
  > # bad arguments: text that is not JSON (OpenAI sends arguments as a string), or a source that is no string
  > bad = '{"source": "void sgemm(' if api == "openai" else {"source": 42}
  > replies = [
  >     {"text": "The task first.", "tool_calls": [{"name": "task_info"}]},
  >     {"tool_calls": [{"name": "check", "arguments": {"name": "four_rows"}, "source_file": fast}]},
  >     {"tool_calls": [{"name": "check", "arguments": bad}, {"name": "profile", "arguments": {}, "source_file": fast}]},
  >     {"tool_calls": [{"name": "check", "arguments": {}, "source_file": wrong}, {"name": "best", "arguments": {}}]},
  >     {"text": "Nothing better to try: the four-row kernel stands."}]
  > req = urllib.request.Request("http://127.0.0.1:%s/control/script" % port, method="POST",
  >     data=json.dumps({"replies": replies, "reset": True}).encode(), headers={"Content-Type": "application/json"})
  > urllib.request.urlopen(req, timeout=5).read()
  > PY
  $ requests() { python3 "$M" --control $(cat port) control/stats | python3 -c 'import json,sys; r=json.load(sys.stdin)["requests"]; print(len(r), r[-1]["path"], len(r[-1]["body"]["tools"]))'; }
  $ agent() { kloop agent "$SG" --lineages 1 --timing-budget 0.05 --seed 1 --no-cache "$@" | grep -E '^conversation|^run|^verdicts'; }

Without a model the strategy says what to configure:

  $ kloop agent "$SG" --no-store 2>&1 | grep -c 'the agent strategy needs a model: no LLM configured'
  1

OpenAI tool calls: five turns, the bad call answered with an error (the conversation goes
on), the profile call refused for a host task, the reply without a tool call ends it:

  $ python3 script.py $(cat port) openai "$KLOOP_SRC"
  $ agent --model mock-agent --llm-url http://127.0.0.1:$(cat port)/v1
  conversation 1 (lineage 1, mock-agent): 5 turns, tool calls: best 1, check 3, profile 1, task_info 1 (1 refused: bad arguments); 2 candidates, * (glob)
  run done (the strategy has nothing more to propose) on sgemm_cpu: 2 candidates in * (glob)
  verdicts: ok 2, wrong 1
  $ requests
  5 /v1/chat/completions 6

One conversation row with its turns and why it stopped; the candidates it produced point
at it with proposer agent:<model>; every model call is an llm_calls row:

  $ sqlite3 kloop.db "SELECT id, run_id, lineage, model, turns, tokens_in > 0, tokens_out > 0, stop_reason FROM conversations"
  1|1|1|mock-agent|5|1|1|final answer: no tool call
  $ sqlite3 kloop.db "SELECT c.id, c.proposer, coalesce(c.conversation_id, '-'), coalesce(c.prompt_id, '-'), e.verdict FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = 1 ORDER BY c.id"
  1|baseline|-|-|ok
  2|agent:mock-agent|1|agent|ok
  3|agent:mock-agent|1|agent|wrong
  $ sqlite3 kloop.db "SELECT count(*), count(candidate_id), sum(outcome = 'ok') FROM llm_calls WHERE run_id = 1"
  5|2|5

The stored messages: each tool call answered by a tool message (errors marked), the
whole conversation in order:

  $ sqlite3 kloop.db "SELECT group_concat(json_extract(value, '$.role') || CASE WHEN json_extract(value, '$.is_error') THEN ':error' ELSE '' END, ' ') FROM conversations, json_each(messages_json) WHERE conversations.id = 1"
  system user assistant tool assistant tool assistant tool:error tool:error assistant tool tool assistant
  $ sqlite3 kloop.db "SELECT json_extract(value, '$.content') FROM conversations, json_each(messages_json) WHERE conversations.id = 1 AND json_extract(value, '$.is_error')" | sed 's/ (.*//; s/;.*//'
  bad arguments: the arguments are not valid JSON
  profiling needs a CUDA task

Anthropic tool use, the same script: a schema-invalid argument this time:

  $ python3 script.py $(cat port) anthropic "$KLOOP_SRC"
  $ agent --model anthropic:mock-claude --llm-url http://127.0.0.1:$(cat port)
  conversation 2 (lineage 1, mock-claude): 5 turns, tool calls: best 1, check 3, profile 1, task_info 1 (1 refused: bad arguments); 2 candidates, * (glob)
  run done (the strategy has nothing more to propose) on sgemm_cpu: 2 candidates in * (glob)
  verdicts: ok 2, wrong 1
  $ requests
  5 /v1/messages 6
  $ sqlite3 kloop.db "SELECT c.proposer, count(*) FROM candidates c JOIN conversations v ON v.id = c.conversation_id WHERE c.run_id = 2 GROUP BY c.proposer"
  agent:mock-claude|2
  $ sqlite3 kloop.db "SELECT json_extract(value, '$.content') FROM conversations, json_each(messages_json) WHERE conversations.id = 2 AND json_extract(value, '$.is_error')" | sed 's/ (.*//; s/;.*//'
  bad arguments: arguments.source: must be a string, got integer
  profiling needs a CUDA task

  $ kill %1 2>/dev/null; true
