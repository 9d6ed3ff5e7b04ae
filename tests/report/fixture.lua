-- tests/report/fixture.lua: a small store for the report specs, written through kloop.store.db's write calls.
-- Two runs of one task: run A with two models and prompt optimize@v1 (a wrong candidate
-- whose reason is an XSS attempt, a compile error, an improvement, a slower ok one, a
-- reply without a candidate that failed), run B with optimize@v2 (drift) and a
-- model name that tries to break out of the SVG. Returns
-- path, { run_a = id, run_b = id, ... }.
local store = require("kloop.store.db")

return function()
  local path = os.tmpname()
  os.remove(path)
  local db = assert(store.open(path))
  local ids = {}
  local function run(seed, t0)
    return assert(db:begin_run { strategy_path = "strategies/bandit.lua", strategy_text = "return {}", task_name = "t_cpu",
      task_path = "t.lua", seed = seed, options = { model = "m-a,m-b" }, budget = { candidates = 5 },
      started_at = t0 })
  end
  local function cand(r, c, ev, calls)
    c.source = c.source or ("void f(void) {}\n// " .. tostring(c.name))
    c.proposer = c.proposer or "llm"
    local id = assert(db:add_candidate(r, c))
    for _, l in ipairs(calls or {}) do
      l.candidate_id = id
      l.model = l.model or c.model
      assert(db:add_llm_call(r, l))
    end
    if ev then assert(db:add_evaluation(id, ev)) end
    return id
  end
  local function ok(ms, at) return { verdict = "ok", reason = "verified", time_ms = ms, ci_ms = { ms * 0.9, ms * 1.1 },
    tflops = 1 / ms, gbps = 10 / ms, created_at = at, resources = { f = { registers = 32, static_smem = 1024 } } } end

  ids.run_a = run(7, "2026-01-01T00:00:00.000Z")
  local a = ids.run_a
  ids.base_a = cand(a, { proposer = "baseline", name = "base", source = "void f(void) {\n  slow();\n}\n" }, ok(10, "2026-01-01T00:00:01.000Z"))
  ids.wrong = cand(a, { model = "m-a", prompt_id = "optimize", prompt_hash = "v1", parents = { ids.base_a }, name = "w" },
    { verdict = "wrong", reason = "</td><script>alert(1)</script> relative error 0.5 (limit 1e-05)",
      evidence = { case = "check1", set = 2 }, created_at = "2026-01-01T00:00:02.000Z" },
    { { tokens_in = 100, tokens_out = 50, cost = 0.001, latency_s = 1.0, outcome = "ok", created_at = "2026-01-01T00:00:01.500Z" } })
  ids.broken = cand(a, { model = "m-b", prompt_id = "optimize", prompt_hash = "v1", parents = { ids.base_a }, name = "]]> <b>x</b>" },
    { verdict = "compile_error", reason = "does not compile", compile_log = "t.c:3: error: expected ';' before '}'",
      created_at = "2026-01-01T00:00:03.000Z" },
    { { tokens_in = 120, tokens_out = 40, cost = 0.002, latency_s = 3.0, outcome = "ok", created_at = "2026-01-01T00:00:02.500Z" } })
  ids.fast = cand(a, { model = "m-a", prompt_id = "optimize", prompt_hash = "v1", parents = { ids.base_a }, name = "fast",
    source = "void f(void) {\n  fast();\n  more();\n}\n" }, ok(4, "2026-01-01T00:00:04.000Z"),
    { { tokens_in = 110, tokens_out = 60, cost = 0.003, latency_s = 2.0, outcome = "ok", created_at = "2026-01-01T00:00:03.500Z" } })
  ids.slower = cand(a, { model = "m-b", prompt_id = "optimize", prompt_hash = "v1", parents = { ids.fast }, name = "slower" },
    ok(6, "2026-01-01T00:00:05.000Z"),
    { { tokens_in = 130, tokens_out = 70, latency_s = 4.0, outcome = "ok", created_at = "2026-01-01T00:00:04.500Z" } })
  -- a request that failed and produced no candidate: its tokens still count
  assert(db:add_llm_call(a, { model = "m-a", tokens_in = 90, tokens_out = 0, cost = 0.0005, latency_s = 0.5, outcome = "failed",
    kind = "malformed", error = "reply cut at 12 bytes", created_at = "2026-01-01T00:00:05.500Z" }))
  assert(db:end_run(a, "done", "budget: candidates", "2026-01-01T00:00:06.000Z"))

  ids.run_b = run(8, "2026-01-02T00:00:00.000Z")
  local b = ids.run_b
  ids.base_b = cand(b, { proposer = "baseline", name = "base" }, ok(10, "2026-01-02T00:00:01.000Z"))
  ids.b1 = cand(b, { model = "m-a", prompt_id = "optimize", prompt_hash = "v2", parents = { ids.base_b }, name = "b1" },
    ok(5, "2026-01-02T00:00:02.000Z"),
    { { tokens_in = 200, tokens_out = 80, cost = 0.004, latency_s = 1.5, outcome = "ok", created_at = "2026-01-02T00:00:01.500Z" } })
  ids.b2 = cand(b, { model = "m-a", prompt_id = "optimize", prompt_hash = "v2", parents = { ids.b1 }, name = "b2" },
    ok(3, "2026-01-02T00:00:03.000Z"),
    { { tokens_in = 210, tokens_out = 90, cost = 0.005, latency_s = 2.5, outcome = "ok", created_at = "2026-01-02T00:00:02.500Z" } })
  -- a model name that tries to end a CDATA section and open a script inside the SVG
  ids.evil = cand(b, { model = "evil]]><script>x</script>", prompt_id = "optimize", prompt_hash = "v2", parents = { ids.b2 },
    name = "evil" }, { verdict = "nan", reason = "]]> 3 NaN elements", created_at = "2026-01-02T00:00:03.500Z" },
    { { tokens_in = 5, tokens_out = 5, latency_s = 0.1, outcome = "ok", created_at = "2026-01-02T00:00:03.200Z" } })
  assert(db:end_run(b, "done", "budget: candidates", "2026-01-02T00:00:04.000Z"))
  db:close()
  return path, ids
end
