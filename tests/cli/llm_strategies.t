Strategies with the LLM proposer, against the mock server scripted with a ladder of
kernels (a wrong one, the i-k-j loop, a four-row loop), on a host task whose baseline
is the slow i-j-k loop.

  $ kloop() { "$KLOOP" "$@"; }
  $ unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/kloop.db
  $ S="$KLOOP_SRC/tests/strategies"; T="$S/sgemm_naive.lua"
  $ python3 "$KLOOP_SRC/tests/mock_llm/server.py" --port-file port --max-seconds 120 >/dev/null 2>&1 &
  $ for i in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  $ URL=http://127.0.0.1:$(cat port)/v1
  $ ladder() { python3 "$S/script_mock.py" "$(cat port)" "$S/ladder_wrong.c" "$KLOOP_SRC/examples/cpu/sgemm.c" "$S/ladder_fast.c" > /dev/null; }

beam: every reply is verified; the wrong one is caught, the faster ones are promoted:

  $ ladder
  $ kloop beam "$T" --budget 3 --width 2 --expand 3 --model mock-coder --llm-url $URL --timing-budget 0.1 --seed 1 | grep -E '^run|^verdicts'
  run done (budget: candidates) on sgemm_naive_cpu: 3 candidates in * (glob)
  verdicts: ok 3, wrong 1
  $ kloop best --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['proposer'], r['model'], r['prompt_id'], r['speedup'] > 3)"
  llm mock-coder optimize True

Every call is in the store with its tokens, and every candidate with its provenance:

  $ sqlite3 kloop.db "SELECT count(*), min(tokens_in) > 0, min(tokens_out) > 0 FROM llm_calls WHERE run_id = 1"
  3|1|1
  $ sqlite3 kloop.db "SELECT proposer, model IS NOT NULL, prompt_hash IS NOT NULL, llm_seed IS NOT NULL FROM candidates WHERE run_id = 1 ORDER BY id"
  baseline|0|0|0
  llm|1|1|1
  llm|1|1|1
  llm|1|1|1

greedy expands the best; a failed proposal (the mock's default reply holds no sgemm)
is counted, not fatal, until the strategy has nothing left to propose because every
proposal fails: then the run is failed, not done, and says why:

  $ ladder
  $ kloop greedy "$T" --pipeline=false --budget 4 --batch 2 --model mock-coder --llm-url $URL --timing-budget 0.1 --seed 2 --no-cache --time 20 2> greedy.err | grep -cE 'proposal without a kernel'
  [1-9] (re)
  $ cut -c1-56 greedy.err
  kloop: no proposal could be had: the last [0-9]+ proposals fa (re)
  $ kloop runs --json | python3 -c "import json,sys; r=[x for x in json.load(sys.stdin) if x['id'] == 2][0]; print(r['status'], r['n_ok'] >= 3)"
  failed True

bandit chooses among arms (templates x models) and reports them:

  $ ladder
  $ kloop bandit "$T" --budget 3 --model mock-a,mock-b --llm-url $URL --timing-budget 0.1 --seed 3 --no-cache 2>/dev/null | grep -E '^arm' | sed 's/ *pulls.*//'
  arm optimize@mock-a
  arm optimize@mock-b

Without any LLM configured (and nothing to tune), kloop says what to configure:

  $ kloop bandit "$T" --budget 1 2>&1 | tail -1
  kloop: init: the task declares no params to tune; configure an LLM (OPENAI_API_KEY, ANTHROPIC_API_KEY or KLOOP_LLM_URL) to search source changes

  $ kill %1 2>/dev/null; true
