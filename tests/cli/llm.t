kloop.llm by hand: configuration messages, and asking a local OpenAI-compatible server (the mock) for a kernel.

  $ kloop() { "$KLOOP" "$@"; }
  $ unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KLOOP_LLM_URL KLOOP_MODEL

Nothing configured: kloop says how, and guesses nothing:

  $ kloop -e 'local e, err = require("kloop.llm.session").config() print(e) print(err)'
  nil
  no LLM configured: set OPENAI_API_KEY (OpenAI; with OPENAI_BASE_URL for another OpenAI-compatible service), or ANTHROPIC_API_KEY (Anthropic), or point --llm-url / KLOOP_LLM_URL at a local OpenAI-compatible server (vLLM, llama.cpp, Ollama: e.g. http://127.0.0.1:11434/v1); then choose a model with --model or KLOOP_MODEL (see docs/LLM.md)
  $ OPENAI_API_KEY=sk-test kloop -e 'print(select(2, require("kloop.llm.session").config()))'
  no model chosen: pass --model NAME or set KLOOP_MODEL (several, comma-separated, make an ensemble)

A local server (the mock, on a free port) and a small task:

  $ python3 "$KLOOP_SRC/tests/mock_llm/server.py" --port-file port --max-seconds 120 >/dev/null 2>&1 &
  $ for i in $(seq 100); do [ -s port ] && break; sleep 0.1; done
  $ export KLOOP_LLM_URL=http://127.0.0.1:$(cat port)/v1 KLOOP_MODEL=mock-coder
  $ cat > scale.cu <<'CU'
  > extern "C" __global__ void scale(int N, const float *x, float *y) {
  >   int i = blockIdx.x * blockDim.x + threadIdx.x;
  >   if (i < N) y[i] = 2.0f * x[i];
  > }
  > CU
  $ cat > scale.lua <<'LUA'
  > return kloop.task {
  >   name = "scale", entry = "scale",
  >   args = { {"N", "int"}, {"x", "const float*", size = "N"}, {"y", "float*", size = "N", output = true} },
  >   sizes = { bench = {N = 1048576}, check = {{N = 1000}, {N = 1}} },
  >   launch = function(s) return {grid = {cdiv(s.N, 256)}, block = {256}} end,
  >   cost = function(s) return {flops = s.N, bytes = 8 * s.N} end,
  > }
  > LUA
  $ kloop -e '
  > local llm = require("kloop.llm.session")
  > local task = assert(require("kloop").load_task("scale.cu"))
  > local r = assert(llm.ask("optimize", {task = task, parent = {source = task.source}}))
  > print(r.prompt, #r.version, r.plans[1])
  > io.write(r.kernel)
  > local t = llm.totals()
  > print(t.calls, t.ok, t.tokens_in > 0, t.tokens_out > 0, t.unpriced)'
  optimize\t16\tgrid = {cdiv(N, 256)}, block = {256} (esc)
  // kloop: launch grid = {cdiv(N, 256)}, block = {256}
  extern "C" __global__ void scale(int N, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // reply 1 from mock-coder
    if (i < N) y[i] = 2.0f * x[i];
  }
  1\t1\ttrue\ttrue\t1 (esc)

  $ kill $! 2>/dev/null; true
