Isolation between candidates (issue 12), as a search meets it: the mock LLM's first
reply overruns its output on the ragged check size (four rows at a time, no remainder
loop), then two correct, faster kernels follow. The overrun is caught by the guard zone
after C, and the correct kernels after it are judged on intact state: the fastest
correct one is the best.

  $ kloop() { "$KLOOP" "$@"; }
  $ unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ S="$KLOOP_SRC/tests/strategies"; T="$S/sgemm_naive.lua"
  $ python3 "$KLOOP_SRC/tests/mock_llm/server.py" --port-file port --max-seconds 120 >/dev/null 2>&1 &
  $ for i in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  $ URL=http://127.0.0.1:$(cat port)/v1
  $ python3 "$S/script_mock.py" "$(cat port)" "$S/ladder_overrun.c" "$KLOOP_SRC/examples/cpu/sgemm.c" "$S/ladder_fast.c" > /dev/null

  $ kloop beam "$T" --budget 3 --width 1 --expand 1 --pipeline=false --no-cache --model mock-coder --llm-url $URL --timing-budget 0.1 --seed 1 | grep -E '^verdicts'
  verdicts: ok 3, out_of_bounds 1
  $ sqlite3 kloop.db "SELECT e.verdict, json_extract(e.evidence_json, '$.side'), json_extract(e.evidence_json, '$.buffer') FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE e.verdict = 'out_of_bounds'"
  out_of_bounds|after|C (check1)
  $ sqlite3 kloop.db "SELECT reason FROM evaluations WHERE verdict = 'out_of_bounds'"
  the kernel wrote outside its buffers: 45 words changed in the guard zone after C (check1), the first 0 bytes past the end

The best is a correct kernel crowned by an interleaved A/B (the last one crowned),
never the one that overran:

  $ kloop best --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['speedup'] > 2, 'overrun' in r['source'])"
  True False
  $ kloop best --json | python3 -c "import json,sys; print(json.load(sys.stdin)['evaluation']['median_ms'])" > best_ms
  $ sqlite3 kloop.db "SELECT median_ms FROM evaluations WHERE verdict = 'ok' AND json_extract(extra_json, '$.crowned') = 1 ORDER BY id DESC LIMIT 1" | python3 -c "import sys; print(abs(float(sys.stdin.read()) - float(open('best_ms').read())) < 1e-9)"
  True

  $ kill %1 2>/dev/null; true
