LLM faults never look like success: each mode of the mock server against a host task,
with the verdict, the exit code, the run's state and its llm_calls rows (one per HTTP
request: outcome, attempt, HTTP status, failure kind).

  $ kloop() { "$KLOOP" "$@"; }
  $ unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL
  $ export KLOOP_CACHE=$PWD/cache
  $ M="$KLOOP_SRC/tests/mock_llm/server.py"; T="$KLOOP_SRC/tests/strategies/sgemm_naive.lua"; SG="$KLOOP_SRC/examples/cpu/sgemm.c"
  $ python3 "$M" --port-file port --max-seconds 280 >/dev/null 2>&1 &
  $ for i in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  $ URL=http://127.0.0.1:$(cat port)/v1
  $ mode() { python3 "$M" --control $(cat port) control/script "{\"reset\": true, \"default\": $1}" > /dev/null; }
  $ requests() { python3 "$M" --control $(cat port) control/stats | python3 -c 'import json,sys; print("requests:", json.load(sys.stdin)["count"])'; }
  $ beam() { db=$1; shift; kloop beam "$T" --budget 1 --width 1 --expand 1 --model mock --llm-url $URL --timing-budget 0.05 --seed 1 --pipeline=false --db $db.db "$@" > $db.out 2> $db.err; echo "exit $?"; }
  $ rows() { sqlite3 $1.db "SELECT 'run ' || status FROM runs; SELECT outcome, attempt, http_status, coalesce(kind, '-'), candidate_id IS NOT NULL FROM llm_calls ORDER BY id"; }

A rejected key (HTTP 401): one request, no retry, the run failed with one clear line:

  $ mode '{"auth": true}'
  $ beam auth; cat auth.err; requests; rows auth
  exit 1
  kloop: propose: the LLM mock refused the request: HTTP 401: Incorrect API key provided. (the server refused the key from KLOOP_LLM_API_KEY: not retried)
  requests: 1
  run failed
  failed|1|401|auth|0

A spent quota (429 insufficient_quota) stops the same way:

  $ mode '{"quota": true}'
  $ beam quota; tail -1 quota.err; requests; rows quota
  exit 1
  kloop: propose: the LLM mock refused the request: HTTP 429: You exceeded your current quota, please check your plan and billing details. (a spend or quota limit: not retried)
  requests: 1
  run failed
  failed|1|429|quota|0

Truncated JSON, empty choices and a reply without code: every proposal fails, so the
strategy has nothing to propose, and the run says so as a failure:

  $ mode '{"truncate": true}'
  $ beam trunc --no-cache; tail -1 trunc.err | cut -c1-92; rows trunc
  exit 1
  kloop: no proposal could be had: the last 2 proposals failed (2 of 2 in the run; last: malfo
  run failed
  failed|1|200|malformed|0
  failed|1|200|malformed|0
  $ mode '{"empty": true}'
  $ beam empty --no-cache; tail -1 empty.err; rows empty
  exit 1
  kloop: no proposal could be had: the last 2 proposals failed (2 of 2 in the run; last: the reply has no choices)
  run failed
  failed|1|200|empty|0
  failed|1|200|empty|0
  $ mode '{"text": "I would rather not."}'
  $ beam nocode --no-cache; tail -1 nocode.err; rows nocode
  exit 1
  kloop: no proposal could be had: the last 2 proposals failed (2 of 2 in the run; last: no kernel in the reply: no code block in the reply)
  run failed
  ok|1|200|-|0
  ok|1|200|-|0

A server that sends its headers and then stalls: the idle timeout ends each attempt, the
deadline ends the call, and the run fails in seconds, not minutes:

  $ mode '{"stall_s": 60}'
  $ beam stall --no-cache --llm-idle-timeout 0.5 --llm-deadline 2; tail -1 stall.err | cut -c1-62; rows stall | sort | uniq -c | sed 's/^ *//'
  exit 1
  kloop: no proposal could be had: the last 2 proposals failed (
  [0-9]+ failed\|[0-9]\|200\|deadline\|0 (re)
  [0-9]+ retry\|[0-9]\|200\|-\|0 (re)
  1 run failed
  $ sqlite3 stall.db "SELECT count(*) > 0 FROM llm_calls WHERE error LIKE '%idle timeout%'"
  1

A reply over the size cap (1 MB by default) fails without a retry; with a larger cap
it is used, and the cache keeps only its kernel and an excerpt:

  $ mode "{\"pad_mb\": 3, \"code_file\": \"$SG\"}"
  $ beam big; tail -1 big.err; rows big
  exit 1
  kloop: no proposal could be had: the last 2 proposals failed (2 of 2 in the run; last: the reply passed the 1 MB cap and was cut off (not retried; raise it with --llm-max-reply or KLOOP_LLM_MAX_REPLY))
  run failed
  failed|1|200|too_large|0
  failed|1|200|too_large|0
  $ beam big4 --llm-max-reply 4M; grep '^run' big4.out | cut -d' ' -f1-2; sqlite3 big4.db "SELECT count(*), max(length(response)) < 8192 FROM llm_cache; SELECT outcome, candidate_id IS NOT NULL FROM llm_calls ORDER BY id LIMIT 1"
  exit 0
  run done
  1|1
  ok|1
  $ test $(stat -c %s big4.db) -lt 1000000 && echo small store
  small store

Bytes that are not UTF-8 become U+FFFD: the candidate is evaluated, its stored source
is valid UTF-8:

  $ mode "{\"non_utf8\": true, \"code_file\": \"$SG\"}"
  $ beam utf --no-cache; grep '^verdicts' utf.out
  exit 0
  verdicts: ok 2
  $ sqlite3 utf.db "SELECT source FROM candidates WHERE proposer = 'llm'" | python3 -c 'import sys; b = sys.stdin.buffer.read(); b.decode("utf-8"); print("utf-8", b.count("\ufffd".encode()))'
  utf-8 2

A model that refuses a parameter (HTTP 400 naming it) gets the request once more
without it, and both requests are recorded:

  $ mode "{\"reject_param\": \"temperature\", \"code_file\": \"$SG\"}"
  $ beam param --no-cache; rows param | head -3; sqlite3 param.db "SELECT error FROM llm_calls WHERE outcome = 'retry'" | grep -o "sent again without 'temperature'"
  exit 0
  run done
  retry|1|400|-|1
  ok|2|200|-|1
  sent again without 'temperature'

Signals: SIGTERM while kloop waits for a model ends the run as interrupted (exit 143),
the open requests recorded as cancelled; two SIGINTs in a row (as `timeout` sends) are
one Ctrl-C, every time:

  $ mode '{"stall_s": 60}'
  $ "$KLOOP" beam "$T" --budget 2 --model mock --llm-url $URL --timing-budget 0.05 --seed 1 --no-cache --db sig.db > sig.out 2>&1 & pid=$!
  $ for i in $(seq 100); do grep -q baseline sig.out 2>/dev/null && break; sleep 0.1; done; sleep 0.5; kill -TERM $pid; wait $pid; echo "exit $?"
  exit 143
  $ sqlite3 sig.db "SELECT status, stop_reason FROM runs; SELECT DISTINCT outcome FROM llm_calls"
  interrupted|SIGTERM
  cancelled
  $ for i in 1 2 3 4 5 6; do
  >   "$KLOOP" beam "$T" --budget 2 --model mock --llm-url $URL --timing-budget 0.05 --seed 1 --no-cache --db int.db > int.out 2>&1 & pid=$!
  >   for j in $(seq 100); do grep -q baseline int.out 2>/dev/null && break; sleep 0.1; done; sleep 0.3
  >   kill -INT $pid; kill -INT $pid; wait $pid; echo "exit $? $(grep -c 'internal error' int.out)"
  > done | sort | uniq -c | sed 's/^ *//'
  6 exit 130 0
  $ sqlite3 int.db "SELECT status, count(*) FROM runs GROUP BY status"
  interrupted|6

  $ kill %1 2>/dev/null; true
