#!/usr/bin/env bash
# tests/report/make_store.sh: builds a store for the report tests from two real short
# bandit searches on a host task against the mock LLM: two priced model names (gpt-4o-mini, gpt-4.1-nano, answered by the mock), two
# versions of the optimize prompt (the shipped one, then an edited copy through
# $KLOOP_PROMPTS), and mixed verdicts (a wrong reply, one that does not compile, faster ones).
# usage: make_store.sh KLOOP DIR   (writes DIR/kloop.db; needs python3 and a C compiler)
set -euo pipefail
KLOOP=$1; DIR=$2
HERE=$(cd "$(dirname "$0")" && pwd); SRC=$(cd "$HERE/../.." && pwd)
S="$SRC/tests/strategies"; T="$S/sgemm_naive.lua"
mkdir -p "$DIR"; cd "$DIR"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL KLOOP_PROMPTS
export KLOOP_CACHE=$DIR/cache KLOOP_DB=$DIR/kloop.db
rm -f port kloop.db kloop.db-wal kloop.db-shm
python3 "$SRC/tests/mock_llm/server.py" --port-file port --max-seconds 300 --parent-pid $$ >/dev/null 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s port ] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat port)/v1
script() { python3 "$S/script_mock.py" "$(cat port)" "$@" >/dev/null; }
search() {
  "$KLOOP" bandit "$T" --budget "$1" --model gpt-4o-mini,gpt-4.1-nano --llm-url "$URL" --timing-budget 0.1 --pipeline=false \
    --seed "$2" --no-cache >/dev/null 2>&1 || true
}
# run 1: the shipped prompts
script "$S/ladder_wrong.c" "$HERE/broken.c" "$SRC/examples/cpu/sgemm.c" "$S/ladder_fast.c" "$S/ladder_fast.c"
search 5 1
# run 2: an edited optimize prompt (a new version of the same template id: drift)
mkdir -p prompts2
cp "$SRC/prompts/"*.txt prompts2/
printf '\nPrefer changes that keep the inner loop contiguous in memory.\n' >> prompts2/optimize_host.txt
script "$SRC/examples/cpu/sgemm.c" "$S/ladder_wrong.c" "$S/ladder_fast.c" "$S/ladder_fast.c"
KLOOP_PROMPTS=$DIR/prompts2 search 4 2
