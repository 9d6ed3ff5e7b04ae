-- tests/spec/store_spec.lua: the run store: provenance round trips, lineage, best, migrations, secrets.
local store = require("kloop.store.db")
local core = require("kloop.core.ffi")
local util = require("kloop.util")

package.path = "tests/spec/support/?.lua;" .. package.path
local fixture = require("store_fixture")
local tmp = fixture.dir
local function fresh_path() return fixture.fresh_path("s") end
local raw_exec = fixture.raw_exec

local RUN = {
  strategy_path = "strategies/beam.lua", strategy_text = "-- beam\nreturn 1\n", task_name = "sgemm",
  task_path = "kernels/gemm.cu", options = { beam = 4, llm = { model = "m1", max_tokens = 512 } },
  budget = { candidates = 10, seconds = 60, tokens = 100000 }, seed = 42, kloop_version = "9.9.9",
  hostname = "box", pid = 77, gpu_name = "NVIDIA H200", gpu_arch = "sm_90", driver_version = "13.0",
  cuda_version = "13.1", nvrtc_version = "13.2", started_at = "2026-01-01T00:00:00.000Z",
}

local CAND = {
  source = "extern \"C\" __global__ void k() {}\n", name = "k.cu", params = { BM = 64, BN = "32" },
  launch_plan = { bench = { { entry = "k", grid = { 4, 2, 1 }, block = { 128, 1, 1 }, smem = 1024 } } },
  proposer = "llm", model = "claude-x", prompt_id = "rewrite", prompt_hash = "abc123",
  sampling = { temperature = 0.7, top_p = 0.9 }, llm_seed = 31337, tokens_in = 1000, tokens_out = 200,
  cost = 0.01, note = "first try", created_at = "2026-01-01T00:00:01.000Z",
}

local RESULT = {
  verdict = "ok", reason = "verified", evidence = { case = "bench", count = 0 }, compile_log = "warning: x",
  resources = { k = { registers = 40, static_smem = 0, spill_stores = 0 } }, samples = { 1.0, 1.1, 0.9 }, reps = 3,
  time_ms = 1.0, ci_ms = { 0.95, 1.05 }, min_ms = 0.9, spread = 0.2, tflops = 100.5, gbps = 2000.25,
  frac_peak = 0.5, bound = "compute", floor_ms = 0.1, profile = { dram_bytes = 123 }, gpu = "NVIDIA H200",
  arch = "sm_90", compile_seconds = 0.3, compile_cached = true, eval_seconds = 2.5, wall_seconds = 3.0,
  output_tail = "hello", created_at = "2026-01-01T00:00:02.000Z",
}

describe("kloop.store.db", function()
  it("round-trips every provenance field of a run, a candidate, an evaluation and an LLM call", function()
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run(RUN))
    local base = assert(db:add_candidate(run, { source = "base", proposer = "baseline" }))
    local cand = { parents = { base } }
    for k, v in pairs(CAND) do cand[k] = v end
    local id = assert(db:add_candidate(run, cand))
    local eid = assert(db:add_evaluation(id, RESULT))
    assert.is_number(eid)
    local lid = assert(db:add_llm_call(run, { candidate_id = id, request_hash = "h1", model = "claude-x",
      latency_s = 1.5, http_status = 200, tokens_in = 1000, tokens_out = 200, retries = 2, cost = 0.01,
      error = "none" }))
    assert(db:end_run(run, "done", "budget exhausted"))

    local r = assert(db:run(run))
    for _, k in ipairs({ "strategy_path", "strategy_text", "task_name", "task_path", "seed", "kloop_version",
      "hostname", "pid", "gpu_name", "gpu_arch", "driver_version", "cuda_version", "nvrtc_version", "started_at" }) do
      assert.are.same(RUN[k], r[k], k)
    end
    assert.are.same(RUN.options, r.options)
    assert.are.same(RUN.budget, r.budget)
    assert.are.equal(store.hash(RUN.strategy_text), r.strategy_hash)
    assert.are.equal("done", r.status)
    assert.are.equal("budget exhausted", r.stop_reason)
    assert.is_string(r.ended_at)

    local c = assert(db:candidate(id))
    for _, k in ipairs({ "source", "name", "proposer", "model", "prompt_id", "prompt_hash", "llm_seed", "tokens_in",
      "tokens_out", "note", "created_at" }) do
      assert.are.same(CAND[k], c[k], k)
    end
    assert.are.equal(store.hash(CAND.source), c.source_hash)
    assert.are.same(CAND.params, c.params)
    assert.are.same(CAND.launch_plan, c.launch_plan)
    assert.are.same(CAND.sampling, c.sampling)
    assert.are.equal(CAND.cost, c.cost_usd)
    assert.are.same({ base }, c.parents)
    assert.are.equal(run, c.run_id)

    local e = c.evaluation
    assert.are.equal(eid, e.id)
    for _, k in ipairs({ "verdict", "reason", "compile_log", "reps", "min_ms", "spread", "tflops", "gbps",
      "frac_peak", "bound", "floor_ms", "gpu", "arch", "compile_seconds", "compile_cached", "eval_seconds",
      "wall_seconds", "created_at", "time_ms", "ci_ms" }) do
      assert.are.same(RESULT[k], e[k], k)
    end
    assert.are.equal(1.0, e.median_ms)
    assert.are.same({ 0.95, 1.05 }, { e.ci_lo_ms, e.ci_hi_ms })
    assert.are.same(RESULT.evidence, e.evidence)
    assert.are.same(RESULT.resources, e.resources)
    assert.are.same(RESULT.samples, e.samples)
    assert.are.same(RESULT.profile, e.profile)
    assert.are.equal("hello", e.extra.output_tail) -- fields without a column are kept
    assert.are.equal("hello", e.output_tail)

    local calls = db:llm_calls(run)
    assert.are.equal(1, #calls)
    assert.are.equal(lid, calls[1].id)
    assert.are.same({ id, "h1", "claude-x", 1.5, 200, 1000, 200, 2, 0.01, "none" },
      { calls[1].candidate_id, calls[1].request_hash, calls[1].model, calls[1].latency_s, calls[1].http_status,
        calls[1].tokens_in, calls[1].tokens_out, calls[1].retries, calls[1].cost_usd, calls[1].error })
    db:close()
  end)

  it("writes and updates LLM calls from the one field list (schema.LLM_CALL_FIELDS)", function()
    local schema = require("kloop.store.schema")
    assert.are.equal(schema.LLM_CALL_FIELDS, store.LLM_CALL_FIELDS)
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run { task_name = "t" })
    -- every column a caller may set exists, and every field name is accepted
    local cols = {}
    for _, c in ipairs(db:query("PRAGMA table_info(llm_calls)")) do cols[c.name] = true end
    local all = {}
    for _, f in ipairs(schema.LLM_CALL_FIELDS) do
      assert.is_true(cols[f.column or f[1]], f[1])
      all[f[1]] = (f.column or f[1]):match("_s$") and 1.5 or 1
    end
    all.candidate_id, all.created_at, all.error = nil, "2026-01-01T00:00:00.000Z", "e"
    assert(db:add_llm_call(run, all))
    -- aliases: cost -> cost_usd, latency -> latency_s, status -> http_status; the column name wins
    local id = assert(db:add_llm_call(run, { model = "m", cost = 0.5, latency = 2.5, status = 429, error = "sk-abcdefghijkl" }))
    local row = db:query("SELECT * FROM llm_calls WHERE id = ?", id)[1]
    assert.are.same({ 0.5, 2.5, 429, "[scrubbed]" }, { row.cost_usd, row.latency_s, row.http_status, row.error })
    assert(db:update_llm_call(id, { cost = 1, cost_usd = 2, status = 200, outcome = "ok", error = "Bearer xyz" }))
    row = db:query("SELECT * FROM llm_calls WHERE id = ?", id)[1]
    assert.are.same({ 2, 200, "ok", "Bearer [scrubbed]", "m" }, { row.cost_usd, row.http_status, row.outcome, row.error, row.model })
    -- fields that are not updated (model, request_hash, attempt, created_at) are left as they were
    assert(db:update_llm_call(id, { model = "other", attempt = 9 }))
    row = db:query("SELECT * FROM llm_calls WHERE id = ?", id)[1]
    assert.are.same({ "m", nil }, { row.model, row.attempt })
    assert.has_error(function() db:update_llm_call(id, { prompt_id = "x" }) end)
    local ok, err = db:update_llm_call(999, { outcome = "ok" })
    assert.is_nil(ok)
    assert.matches("no llm call 999", err)
    db:close()
  end)

  it("attaches a profile to a recorded evaluation, and reads it back", function()
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run(RUN))
    local id = assert(db:add_candidate(run, { source = "k", proposer = "user" }))
    local eid = assert(db:add_evaluation(id, { verdict = "ok", time_ms = 2 }))
    assert.is_nil(db:evaluations(id)[1].profile)
    local summary = { bound = "memory", frac = 0.81, hints = { { kind = "reuse", text = "reuse it" } },
      metrics = { ["dram__bytes_read.sum"] = 536870912 } }
    assert(db:set_profile(eid, summary))
    local e = db:evaluations(id)[1]
    assert.are.equal("memory", e.profile.bound)
    assert.are.equal(536870912, e.profile.metrics["dram__bytes_read.sum"])
    assert.are.equal("reuse it", e.profile.hints[1].text)
    local ok, err = db:set_profile(eid + 100, summary)
    assert.is_nil(ok)
    assert.matches("no evaluation", err)
    assert.has_error(function() db:set_profile(eid, "text") end)
    db:close()
  end)

  it("fills kloop version, host, pid and start time when not given", function()
    local db = assert(store.open(fresh_path()))
    local r = assert(db:run(assert(db:begin_run { task_name = "t" })))
    assert.are.equal(core.version(), r.kloop_version)
    assert.are.equal(require("kloop.core.sys").getpid(), r.pid)
    assert.is_string(r.hostname)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT", r.started_at)
    assert.are.equal("running", r.status)
    assert.is_true(r.writer_alive)
    db:close()
  end)

  it("follows lineage through several parents and finds the best verified candidate", function()
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run { task_name = "t" })
    local a = assert(db:add_candidate(run, { source = "a", proposer = "baseline" }))
    local b = assert(db:add_candidate(run, { source = "b", proposer = "tune", parents = { a } }))
    local c = assert(db:add_candidate(run, { source = "c", proposer = "tune", parents = { a } }))
    local d = assert(db:add_candidate(run, { source = "d", proposer = "llm", parents = { b, c } }))
    local other = assert(db:begin_run { task_name = "t2" })
    local e = assert(db:add_candidate(other, { source = "e", proposer = "user", parents = { d } })) -- across runs
    assert(db:add_evaluation(a, { verdict = "ok", time_ms = 4 }))
    assert(db:add_evaluation(b, { verdict = "ok", time_ms = 2 }))
    assert(db:add_evaluation(c, { verdict = "wrong", time_ms = 0.5 })) -- fast but wrong: never best
    assert(db:add_evaluation(d, { verdict = "ok", time_ms = 1 }))
    assert(db:add_evaluation(e, { verdict = "ok", time_ms = 3 }))

    local lin = assert(db:lineage(e))
    local got = {}
    for _, x in ipairs(lin) do got[#got + 1] = { x.id, x.depth } end
    assert.are.same({ { e, 0 }, { d, 1 }, { b, 2 }, { c, 2 }, { a, 3 } }, got)
    assert.are.same({ b, c }, lin[2].parents)
    assert.are.same({}, lin[5].parents)

    assert.are.equal(d, assert(db:best(run)).id)
    assert.are.equal(1, db:best(run).evaluation.median_ms)
    assert.are.equal(e, assert(db:best(other)).id)
    assert.are.equal(d, assert(db:best()).id)
    local runs = db:runs()
    assert.are.equal(2, #runs)
    assert.are.equal(4, runs[1].n_candidates)
    assert.are.equal(3, runs[1].n_ok)
    assert.are.equal(4, runs[1].speedup) -- baseline 4 ms / best 1 ms
    assert.is_nil(runs[2].speedup) -- no baseline candidate

    local list = assert(db:candidates(run))
    assert.are.same({ a, b, c, d }, { list[1].id, list[2].id, list[3].id, list[4].id })
    assert.are.same({ b, c }, list[4].parents)
    assert.are.equal("wrong", list[3].evaluation.verdict)
    db:close()
  end)

  it("gives nil, msg for unknown ids and raises on misuse", function()
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run { task_name = "t" })
    local ok, err = db:add_candidate(999, { source = "x" })
    assert.is_nil(ok)
    assert.matches("no run 999", err)
    ok, err = db:add_candidate(run, { source = "x", parents = { 555 } })
    assert.is_nil(ok)
    assert.matches("no parent candidate 555", err)
    assert.are.equal(0, #assert(db:candidates(run))) -- the failed insert was rolled back whole
    ok, err = db:add_evaluation(12345, { verdict = "ok" })
    assert.is_nil(ok)
    assert.matches("no candidate 12345", err)
    assert.is_nil((db:run(5)))
    assert.is_nil((db:candidate(5)))
    assert.is_nil((db:lineage(5)))
    assert.is_nil((db:best(5)))
    assert.is_nil((db:candidates(5)))
    assert.is_nil((db:resume_state(5)))
    ok, err = db:best(run)
    assert.is_nil(ok)
    assert.matches("no verified candidate in run", err)
    ok, err = db:end_run(5, "done")
    assert.is_nil(ok)
    assert.matches("no run 5", err)

    assert.has_error(function() db:add_candidate(run, { proposer = "tune" }) end)
    assert.has_error(function() db:add_candidate(run, { source = "x", proposer = "oracle" }) end)
    assert.has_error(function() db:add_candidate(run, { source = "x", sauce = 1 }) end)
    assert.has_error(function() db:add_evaluation(1, { reason = "no verdict" }) end)
    assert.has_error(function() db:end_run(run, "finished") end)
    assert.has_error(function() db:begin_run { tsak = "typo" } end)
    assert.has_error(function() db:add_llm_call(run, { api_key = "x" }) end)
    db:close()
    assert.has_error(function() db:runs() end)
  end)

  it("commits each write at once: a second connection sees it", function()
    local path = fresh_path()
    local w = assert(store.open(path))
    local r = assert(store.open(path))
    local run = assert(w:begin_run { task_name = "t" })
    local c = assert(w:add_candidate(run, { source = "x" }))
    assert(w:add_evaluation(c, { verdict = "ok", time_ms = 1 }))
    assert.are.equal(1, #r:candidates(run)[1].evaluations)
    -- an explicit batch is all or nothing
    assert.has_error(function()
      w:batch(function()
        assert(w:add_candidate(run, { source = "y" }))
        error("boom")
      end)
    end)
    assert.are.equal(1, #r:candidates(run))
    local a, b = w:batch(function()
      return w:add_candidate(run, { source = "y" }), w:add_candidate(run, { source = "z" })
    end)
    assert.is_number(a)
    assert.is_number(b)
    assert.are.equal(3, #r:candidates(run))
    w:close()
    r:close()
  end)

  it("gives a resume state with pending candidates and lets the run continue", function()
    local path = fresh_path()
    local db = assert(store.open(path))
    local run = assert(db:begin_run { task_name = "t" })
    local a = assert(db:add_candidate(run, { source = "a", proposer = "baseline" }))
    assert(db:add_evaluation(a, { verdict = "ok", time_ms = 2 }))
    local b = assert(db:add_candidate(run, { source = "b", parents = { a } }))
    db:close()
    db = assert(store.open(path))
    local st = assert(db:resume_state(run))
    assert.are.equal(run, st.run.id)
    assert.are.equal(2, #st.candidates)
    assert.are.equal(1, st.evaluated)
    assert.are.same({ b }, { st.pending[1].id })
    assert.are.equal(a, st.best.id)
    assert(db:reopen_run(run))
    assert(db:add_evaluation(b, { verdict = "ok", time_ms = 1 }))
    assert(db:end_run(run, "interrupted", "ctrl-c"))
    st = assert(db:resume_state(run))
    assert.are.equal(0, #st.pending)
    assert.are.equal(b, st.best.id)
    assert.are.equal("interrupted", st.run.status)
    db:close()
  end)

  it("stores no credential from options, budget, text fields or the environment", function()
    local path = fresh_path()
    local planted = "sk-kloop-planted-" .. string.format("%08x", math.random(0, 0x7fffffff))
    local other = "hunter2-" .. string.format("%08x", math.random(0, 0x7fffffff))
    -- os.getenv cannot be set from Lua: the writer is a child kloop with the key in its environment
    local script = tmp .. "/plant.lua"
    util.write_file(script, string.format([[
local store = require("kloop.store.db")
local db = assert(store.open(%q))
local run = assert(db:begin_run { task_name = "t", strategy_text = "local key = '%s'\n",
  options = { api_key = %q, OPENAI_API_KEY = %q, llm = { headers = { Authorization = "Bearer " .. %q },
    token = %q, password = %q, note = "key is " .. %q, list = { %q } }, max_tokens = 100, model = "m" },
  budget = { tokens = 5000, secret = %q } })
local c = assert(db:add_candidate(run, { source = "x", note = "from env " .. os.getenv("MY_DB_PASSWORD"),
  sampling = { temperature = 0.5, api_key = os.getenv("OPENAI_API_KEY") } }))
assert(db:add_evaluation(c, { verdict = "crashed", reason = "died with " .. os.getenv("OPENAI_API_KEY"),
  output_tail = "env " .. os.getenv("OPENAI_API_KEY") }))
assert(db:add_llm_call(run, { model = "m", error = "401 for key " .. os.getenv("OPENAI_API_KEY") }))
assert(db:end_run(run, "failed", "auth failed for " .. os.getenv("MY_DB_PASSWORD")))
-- exit without closing: the -wal file stays for the grep
os.exit(0)
]], path, planted, planted, planted, planted, planted, planted, planted, planted, planted))
    local cmd = string.format("OPENAI_API_KEY=%s MY_DB_PASSWORD=%s %s %s 2>&1; echo rc=$?", planted, other,
      util.shell_quote(core.exe_path()), util.shell_quote(script))
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    assert.matches("rc=0", out, 1, true)
    local wal = util.read_file(path .. "-wal") or ""
    assert.is_true(#wal > 0) -- the rows are still in the write-ahead log: grep that too
    local bytes = (util.read_file(path) or "") .. wal
    assert.is_nil(bytes:find(planted, 1, true), "the planted key is in the database")
    assert.is_nil(bytes:find(other, 1, true), "the planted password is in the database")
    local db = assert(store.open(path))
    local r = assert(db:run(1))
    assert.are.equal(100, r.options.max_tokens) -- counts of tokens are not secrets
    assert.are.equal(5000, r.budget.tokens)
    assert.are.equal("m", r.options.model)
    assert.are.equal("[scrubbed]", r.options.api_key)
    assert.are.equal("died with [scrubbed]", db:candidate(1).evaluation.reason)
    db:close()
    bytes = (util.read_file(path) or "") .. (util.read_file(path .. "-wal") or "")
    assert.is_nil(bytes:find(planted, 1, true))
  end)

  it("recognizes credential names but not token counts", function()
    for _, k in ipairs({ "api_key", "OPENAI_API_KEY", "apiKey", "apikey", "token", "access_token", "accessToken",
      "secret", "client_secret", "password", "DB_PASSWORD", "Authorization" }) do
      assert.is_truthy(store.sensitive_name(k), k)
    end
    for _, k in ipairs({ "max_tokens", "tokens", "tokens_in", "model", "temperature", "beam", "seed" }) do
      assert.is_falsy(store.sensitive_name(k), k)
    end
    assert.are.equal("key [scrubbed] end", store.scrub_text("key sk-abcdefghijklmnop end"))
    assert.are.equal("task-sk-1 stays", store.scrub_text("task-sk-1 stays"))
  end)
end)

describe("kloop.store schema versions", function()
  local v1_sql = util.read_file("tests/store/schema_v1.sql")

  local function schema(path)
    local db = assert(store.open(path))
    local rows = assert(db:query("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"))
    local version = db:query("PRAGMA user_version")[1].user_version
    db:close()
    return rows, version
  end

  it("opens a version 1 database, keeps its rows and ends at the schema of a fresh one", function()
    assert.is_string(v1_sql)
    local old = fresh_path()
    raw_exec(old, v1_sql)
    local db = assert(store.open(old))
    local r = assert(db:run(1))
    assert.are.equal("old-box", r.hostname)
    assert.are.same({ beam = 4 }, r.options)
    assert.are.equal(2, assert(db:best(1)).id)
    assert.are.same({ 1 }, assert(db:candidate(2)).parents)
    assert.are.equal(429, db:llm_calls(1)[1].http_status)
    db:close()
    local migrated, v1 = schema(old)
    local fresh, v2 = schema(fresh_path())
    assert.are.equal(store.schema_version(), v1)
    assert.are.equal(store.schema_version(), v2)
    -- migration 1 must stay as released: a fresh store and a migrated one agree
    assert.are.same(fresh, migrated)
  end)

  it("applies appended migrations in order, each in its own transaction", function()
    local old = fresh_path()
    raw_exec(old, v1_sql)
    local n = store.schema_version()
    local function released(...)
      local out = {}
      for i = 1, n do out[i] = store.migrations[i] end
      for _, step in ipairs({ ... }) do out[#out + 1] = step end
      return out
    end
    local migrations = released(
      "ALTER TABLE candidates ADD COLUMN flavor TEXT; UPDATE candidates SET flavor = 'vanilla';",
      function(db) return db:write("UPDATE candidates SET flavor = 'mint' WHERE id = 2") end)
    local db = assert(store.open(old, { migrations = migrations }))
    assert.are.equal(n + 2, db:query("PRAGMA user_version")[1].user_version)
    local rows = db:query("SELECT id, flavor FROM candidates ORDER BY id")
    assert.are.same({ { id = 1, flavor = "vanilla" }, { id = 2, flavor = "mint" } }, rows)
    -- migration 3: every evaluation of a version 1 store was a full one
    local stages = db:query("SELECT DISTINCT stage FROM evaluations")
    assert.are.same({ { stage = "full" } }, stages)
    db:close()
    -- a failing step leaves the database at the last good version
    local bad = fresh_path()
    raw_exec(bad, v1_sql)
    local ok, err = store.open(bad, { migrations = released("ALTER TABLE candidates ADD COLUMN a TEXT;",
      "ALTER TABLE nonesuch ADD COLUMN b TEXT;") })
    assert.is_nil(ok)
    assert.matches("migration to schema version " .. (n + 2) .. " failed", err, 1, true)
    db = assert(store.open(bad, { migrations = released("ALTER TABLE candidates ADD COLUMN a TEXT;") }))
    assert.are.equal(n + 1, db:query("PRAGMA user_version")[1].user_version)
    db:close()
    -- and this kloop, which knows fewer versions, refuses the migrated file
    ok, err = store.open(old)
    assert.is_nil(ok)
    assert.matches(old, err, 1, true)
    assert.matches("schema version " .. (n + 2) .. " is newer than this kloop understands (it knows up to " .. n .. ")", err, 1, true)
  end)

  it("refuses a newer database, a foreign one and a file that is not SQLite, naming the file", function()
    local newer = fresh_path()
    raw_exec(newer, "CREATE TABLE x (a); PRAGMA user_version = 99;")
    local ok, err = store.open(newer)
    assert.is_nil(ok)
    assert.matches(newer, err, 1, true)
    assert.matches("99", err, 1, true)
    assert.matches("up to " .. store.schema_version(), err, 1, true)

    local foreign = fresh_path()
    raw_exec(foreign, "CREATE TABLE people (name TEXT);")
    ok, err = store.open(foreign)
    assert.is_nil(ok)
    assert.matches("not a kloop database", err, 1, true)

    local junk = fresh_path()
    util.write_file(junk, string.rep("this is not a database\n", 200))
    ok, err = store.open(junk)
    assert.is_nil(ok)
    assert.matches(junk .. ": not a SQLite database", err, 1, true)

    ok, err = store.open(tmp .. "/missing.db", { create = false })
    assert.is_nil(ok)
    assert.matches("no database at", err, 1, true)
    assert.is_false(util.file_exists(tmp .. "/missing.db"))
  end)
end)

describe("API keys in kloop's own environment", function()
  it("are gone from /proc/self/environ, getenv and children once the LLM config read them, and still work", function()
    local planted = "sk-kloop-planted-" .. string.format("%08x", math.random(0, 0x7fffffff))
    local aplanted = "sk-ant-planted-" .. string.format("%08x", math.random(0, 0x7fffffff))
    local local_key = "local-planted-" .. string.format("%08x", math.random(0, 0x7fffffff))
    -- the environment is the child's: it is started with the keys, and reports on itself
    local script = tmp .. "/keys.lua"
    util.write_file(script, string.format([[
local util, C, ffi = require("kloop.util"), require("kloop.core.ffi").C, require("ffi")
local function environ() return util.read_file("/proc/self/environ") or "" end
local function has(s) return (s:find(%q, 1, true) or s:find(%q, 1, true) or s:find(%q, 1, true)) and "yes" or "no" end
print("before " .. has(environ()))
local llm = require("kloop.llm.session")
local mock = assert(dofile(%q).start())
local eps = assert(llm.config({ model = "gpt-4o", llm_url = mock.openai_url, key_env = "KLOOP_LLM_API_KEY" }))
print("environ " .. has(environ()))
print("getenv " .. has((os.getenv("OPENAI_API_KEY") or "") .. (os.getenv("ANTHROPIC_API_KEY") or "")
  .. (os.getenv("KLOOP_LLM_API_KEY") or "")))
-- a child given the whole environment (no filter) inherits none of them
local argv = ffi.new("const char*[2]")
argv[0] = "/usr/bin/env"
local p, err = ffi.new("kl_proc"), ffi.new("kl_err")
assert(C.kl_proc_spawn(p, argv, nil, err) == 0, ffi.string(err.msg))
C.kl_proc_close(p, 5000)
local out = ffi.string(p.tail, p.tail_len)
print("child " .. (out:find("PATH=", 1, true) and has(out) or "silent"))
-- read again (a second config) the kept keys still serve, and travel in the header
local again = assert(llm.config({ model = "claude-x" }))
print("again " .. again[1].api .. " " .. tostring(again[1].has_key))
local h = llm.session({ no_cache = true }):complete(eps[1], { { role = "user", content = "hi" } })
local req = mock:stats().requests[1]
print("header " .. tostring(h.ok) .. " " .. tostring(req.headers.authorization == "Bearer " .. %q))
print("store scrubs " .. require("kloop.store.db").scrub_text("x " .. %q .. " y"))
mock:stop()
]], planted, aplanted, local_key, "tests/mock_llm/mock.lua", local_key, local_key))
    local cmd = string.format("OPENAI_API_KEY=%s ANTHROPIC_API_KEY=%s KLOOP_LLM_API_KEY=%s %s %s 2>&1; echo rc=$?",
      planted, aplanted, local_key, util.shell_quote(core.exe_path()), util.shell_quote(script))
    local out = util.capture(cmd)
    assert.matches("rc=0", out, 1, true)
    assert.matches("before yes", out, 1, true) -- the check sees a planted key while it is there
    assert.matches("environ no", out, 1, true)
    assert.matches("getenv no", out, 1, true)
    assert.matches("child no", out, 1, true)
    assert.matches("again anthropic true", out, 1, true)
    assert.matches("header true true", out, 1, true)
    assert.matches("store scrubs x [scrubbed] y", out, 1, true)
  end)
end)

describe("kloop.store proposers", function()
  it("takes the four built-in proposers and agent:NAME, and refuses the rest", function()
    local db = assert(store.open(fresh_path()))
    local run = assert(db:begin_run(RUN))
    for _, p in ipairs({ "tune", "llm", "baseline", "user", "agent:claude-code", "agent:codex_1.2" }) do
      assert.is_number(db:add_candidate(run, { source = "k " .. p, proposer = p }))
    end
    for _, p in ipairs({ "agent:", "agent:a b", "agent:" .. string.rep("x", 65), "Agent:x", "llm2", "agent:x;DROP" }) do
      assert.has_error(function() db:add_candidate(run, { source = "k", proposer = p }) end)
    end
    db:close()
  end)
end)
