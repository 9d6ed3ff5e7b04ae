-- tests/spec/llm_spec.lua: the LLM client end to end against tests/mock_llm (both protocols,
-- concurrency, faults, cache, accounting, secrets).
local llm = require("kloop.llm.session")
local core = require("kloop.core.ffi")
local cjson = require("cjson")
local util = require("kloop.util")

local MOCK = dofile("tests/mock_llm/mock.lua")
local KEY = "sk-kloop-planted-SECRET-0123456789"
local AKEY = "sk-ant-kloop-planted-SECRET-98765"

local function msgs(s) return { { role = "system", content = "be brief" }, { role = "user", content = s } } end

-- Fast retries so the fault tests stay short; every test gets a fresh session.
local FAST = { backoff_base_s = 0.05, backoff_max_s = 0.2, max_retries = 3 }
local function with(t, extra)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("kloop.llm configuration", function()
  it("says how to configure one when nothing is set, and never guesses", function()
    local eps, err = llm.config({ env = {} })
    assert.is_nil(eps)
    assert.matches("OPENAI_API_KEY", err)
    assert.matches("ANTHROPIC_API_KEY", err)
    assert.matches("%-%-llm%-url", err)
    assert.matches("KLOOP_MODEL", err)
  end)

  it("asks for a model when a provider is set but no model", function()
    local eps, err = llm.config({ env = { OPENAI_API_KEY = KEY } })
    assert.is_nil(eps)
    assert.matches("no model chosen", err)
  end)

  it("refuses the vendor URL without a key, accepts a local server without one", function()
    local eps, err = llm.config({ env = { OPENAI_BASE_URL = llm.DEFAULT_OPENAI_URL }, model = "gpt-4o" })
    assert.is_nil(eps)
    assert.matches("OPENAI_API_KEY is not set", err)
    eps = assert(llm.config({ env = {}, model = "qwen", llm_url = "http://127.0.0.1:8000/v1" }))
    assert.are.equal("http://127.0.0.1:8000/v1/chat/completions", eps[1].url)
    assert.is_false(eps[1].has_key)
  end)

  it("follows the vendors' variables and builds an ensemble from KLOOP_MODEL", function()
    local env = { OPENAI_API_KEY = KEY, ANTHROPIC_API_KEY = AKEY, KLOOP_MODEL = "gpt-4o, claude-sonnet-4-5,anthropic:x" }
    local eps = assert(llm.config({ env = env }))
    assert.are.equal(3, #eps)
    assert.are.equal("openai", eps[1].api)
    assert.are.equal("https://api.openai.com/v1/chat/completions", eps[1].url)
    assert.are.equal("anthropic", eps[2].api)
    assert.are.equal("https://api.anthropic.com/v1/messages", eps[2].url)
    assert.are.equal("x", eps[3].model)
    -- ollama-style names keep their colon
    eps = assert(llm.config({ env = {}, model = "llama3:8b", llm_url = "http://127.0.0.1:11434/v1" }))
    assert.are.equal("llama3:8b", eps[1].model)
  end)

  it("keeps the key out of the endpoint table and off explicit URLs", function()
    local eps = assert(llm.config({ env = { OPENAI_API_KEY = KEY }, model = "gpt-4o" }))
    assert.is_nil(cjson.encode(eps):find(KEY, 1, true))
    local _, headers = llm.build_request(eps[1], msgs("x"), {})
    assert.truthy(table.concat(headers, "\n"):find("Bearer " .. KEY, 1, true))
    -- an explicit --llm-url never receives OPENAI_API_KEY
    eps = assert(llm.config({ env = { OPENAI_API_KEY = KEY }, model = "m", llm_url = "http://127.0.0.1:9/v1" }))
    _, headers = llm.build_request(eps[1], msgs("x"), {})
    assert.is_nil(table.concat(headers, "\n"):find(KEY, 1, true))
  end)
end)

describe("kloop.llm against the mock server", function()
  local mock, oai, anth
  setup(function()
    mock = assert(MOCK.start())
    oai = assert(llm.config(with(FAST, { env = { OPENAI_API_KEY = KEY, OPENAI_BASE_URL = mock.openai_url }, model = "gpt-4o" })))[1]
    anth = assert(llm.config(with(FAST, { env = { ANTHROPIC_API_KEY = AKEY, ANTHROPIC_BASE_URL = mock.anthropic_url },
      model = "claude-sonnet-4-5" })))[1]
  end)
  teardown(function() if mock then mock:stop() end end)
  before_each(function() mock:reset() end)

  it("speaks OpenAI chat completions", function()
    local s = llm.session({ no_cache = true })
    local h = s:complete(oai, msgs("hello"), { temperature = 0.5, seed = 7 })
    assert.is_true(h.ok, h.reason)
    assert.matches("__global__ void scale", h.text)
    assert.is_true(h.usage.input > 0 and h.usage.output > 0)
    local req = mock:stats().requests[1]
    assert.are.equal("/v1/chat/completions", req.path)
    assert.are.equal("Bearer " .. KEY, req.headers.authorization)
    assert.are.equal("gpt-4o", req.body.model)
    assert.are.equal(7, req.body.seed)
    assert.are.equal("system", req.body.messages[1].role)
  end)

  it("speaks Anthropic messages", function()
    local s = llm.session({ no_cache = true })
    local h = s:complete(anth, msgs("hello"), { seed = 7 })
    assert.is_true(h.ok, h.reason)
    assert.matches("__global__", h.text)
    local req = mock:stats().requests[1]
    assert.are.equal("/v1/messages", req.path)
    assert.are.equal(AKEY, req.headers["x-api-key"])
    assert.are.equal("2023-06-01", req.headers["anthropic-version"])
    assert.is_nil(req.headers.authorization)
    assert.are.equal("be brief", req.body.system)
    assert.are.equal(1, #req.body.messages)
    assert.are.equal(8192, req.body.max_tokens)
    assert.is_nil(req.body.seed)
  end)

  it("keeps many requests in flight at once (8 x 1 s in well under 8 s)", function()
    mock:script({ default = { delay_s = 1 } })
    local s = llm.session({ no_cache = true })
    local t0 = core.now()
    for i = 1, 8 do s:request(oai, msgs("q" .. i)) end
    local done = {}
    while #done < 8 and core.now() - t0 < 10 do
      for _, h in ipairs(s:poll(100)) do done[#done + 1] = h end
    end
    local dt = core.now() - t0
    assert.are.equal(8, #done)
    for _, h in ipairs(done) do assert.is_true(h.ok, h.reason) end
    assert.is_true(dt < 2.5, "8 concurrent requests took " .. dt .. " s")
  end)

  it("never returns from poll later than asked while calls are slow", function()
    mock:script({ default = { delay_s = 1 } })
    local s = llm.session({ no_cache = true })
    local h = s:request(oai, msgs("slow"))
    local t0 = core.now()
    local got = s:poll(50)
    assert.is_true(core.now() - t0 < 0.3)
    assert.are.equal(0, #got)
    assert.is_true(s:wait(h).ok)
  end)

  it("honours the per-endpoint concurrency limit", function()
    mock:script({ default = { delay_s = 0.4 } })
    local ep = assert(llm.config(with(FAST, { env = {}, model = "m", llm_url = mock.openai_url, concurrency = 2 })))[1]
    local s = llm.session({ no_cache = true })
    local t0 = core.now()
    local hs = {}
    for i = 1, 4 do hs[i] = s:request(ep, msgs("c" .. i)) end
    for _, h in ipairs(hs) do s:wait(h) end
    local dt = core.now() - t0
    assert.is_true(dt >= 0.75 and dt < 1.6, "4 requests, 2 at a time, 0.4 s each took " .. dt)
  end)

  it("retries a 429 after its retry-after (seconds), measured", function()
    mock:script({ replies = { { status = 429, retry_after = "1" } } })
    local s = llm.session({ no_cache = true })
    local h = s:complete(oai, msgs("rl"))
    assert.is_true(h.ok, h.reason)
    assert.are.equal(1, h.retries)
    assert.are.equal(2, mock:stats().count)
    assert.is_true(h.latency_s >= 0.95 and h.latency_s < 2, "latency " .. h.latency_s)
  end)

  it("prefers retry-after-ms and caps a huge retry-after", function()
    mock:script({ replies = { { status = 429, retry_after_ms = "300", retry_after = "5" } } })
    local s = llm.session({ no_cache = true })
    local h = s:complete(oai, msgs("rlms"))
    assert.is_true(h.ok, h.reason)
    assert.is_true(h.latency_s >= 0.28 and h.latency_s < 1, "latency " .. h.latency_s)
    local ep = assert(llm.config(with(FAST, { env = {}, model = "m", llm_url = mock.openai_url, retry_after_max_s = 0.2 })))[1]
    mock:script({ replies = { { status = 503, retry_after = "30" } } })
    h = s:complete(ep, msgs("cap"))
    assert.is_true(h.ok, h.reason)
    assert.is_true(h.latency_s < 1, "retry-after was not capped: " .. h.latency_s)
  end)

  it("retries a 500 and a dropped connection, with bounded retries", function()
    -- the drop comes first, on a fresh connection (curl itself silently retries a
    -- request whose reused connection turns out dead, which would hide it)
    mock:script({ replies = { { drop = true }, { status = 500 } } })
    local s = llm.session({ no_cache = true })
    local h = s:complete(oai, msgs("flaky"))
    assert.is_true(h.ok, h.reason)
    assert.are.equal(2, h.retries)
    assert.are.equal(3, mock:stats().count)
    mock:reset()
    mock:script({ default = { status = 500 } })
    h = s:complete(oai, msgs("down"))
    assert.is_false(h.ok)
    assert.matches("gave up after 4 attempts", h.reason)
    assert.matches("HTTP 500", h.reason)
    assert.are.equal(4, mock:stats().count)
    -- the jittered backoff grows: 0.05 s base, capped at 0.2 s
    for i, d in ipairs(h.retry_delays) do assert.is_true(d <= 0.2 + 1e-9 and d >= 0.025, "delay " .. i .. " = " .. d) end
  end)

  it("does not retry a 400 nor a 429 that means the quota is spent", function()
    mock:script({ replies = { { status = 400 } } })
    local s = llm.session({ no_cache = true })
    local h = s:complete(oai, msgs("bad"))
    assert.is_false(h.ok)
    assert.are.equal("http", h.kind)
    assert.matches("HTTP 400", h.reason)
    assert.are.equal(1, mock:stats().count)
    mock:reset()
    mock:script({ replies = { { quota = true } } })
    h = s:complete(oai, msgs("broke"))
    assert.is_false(h.ok)
    assert.are.equal("quota", h.kind)
    assert.are.equal(1, mock:stats().count)
  end)

  it("ends a call at its deadline", function()
    mock:script({ default = { delay_s = 3 } })
    local s = llm.session({ no_cache = true })
    local t0 = core.now()
    local h = s:complete(oai, msgs("hang"), { deadline_s = 0.8 })
    local dt = core.now() - t0
    assert.is_false(h.ok)
    assert.are.equal("deadline", h.kind)
    assert.is_true(dt >= 0.75 and dt < 1.6, "deadline took " .. dt)
  end)

  it("turns truncated JSON, empty choices and missing text into failures with reasons", function()
    local s = llm.session({ no_cache = true })
    mock:script({ replies = { { truncate = true }, { empty = true }, { no_content = true } } })
    local h1 = s:complete(oai, msgs("t1"))
    local h2 = s:complete(oai, msgs("t2"))
    local h3 = s:complete(oai, msgs("t3"))
    assert.is_false(h1.ok) assert.matches("malformed JSON", h1.reason) assert.are.equal("malformed", h1.kind)
    assert.is_false(h2.ok) assert.matches("no choices", h2.reason)
    assert.is_false(h3.ok) assert.matches("no text", h3.reason)
    mock:script({ replies = { { empty = true }, { truncate = true } } })
    local h4 = s:complete(anth, msgs("t4"))
    local h5 = s:complete(anth, msgs("t5"))
    assert.is_false(h4.ok) assert.matches("no content blocks", h4.reason)
    assert.is_false(h5.ok) assert.matches("malformed", h5.reason)
    assert.are.equal(5, s.totals.failed)
  end)

  it("accounts tokens, latency and cost per call and per run", function()
    local s = llm.session({ no_cache = true })
    mock:script({ replies = { { usage = { ["in"] = 1000, out = 500 } }, { usage = { ["in"] = 2000, out = 100 } } } })
    local h1 = s:complete(oai, msgs("a1"))
    local h2 = s:complete(anth, msgs("a2"))
    assert.are.same({ input = 1000, output = 500 }, h1.usage)
    assert.is_true(math.abs(h1.cost - (1000 * 2.5 + 500 * 10) / 1e6) < 1e-12)
    assert.is_true(math.abs(h2.cost - (2000 * 3 + 100 * 15) / 1e6) < 1e-12) -- claude-sonnet-4 prefix
    local t = s.totals
    assert.are.equal(3000, t.tokens_in)
    assert.are.equal(600, t.tokens_out)
    assert.is_true(math.abs(t.cost - h1.cost - h2.cost) < 1e-12)
    assert.are.equal(2, t.calls)
    assert.is_true(t.latency_s > 0)
    assert.are.equal(1, t.by_model["gpt-4o"].calls)
    -- an unknown model is unpriced, and prices can be overridden
    local ep = assert(llm.config({ env = {}, model = "local-model", llm_url = mock.openai_url }))[1]
    mock:script({ replies = { { usage = { ["in"] = 10, out = 10 } } } })
    local h3 = s:complete(ep, msgs("a3"))
    assert.is_nil(h3.cost)
    assert.are.equal(1, s.totals.unpriced)
    local path = os.tmpname() .. ".json"
    util.write_file(path, '{"local-model": {"input": 1, "output": 2}}')
    assert(llm.load_prices(path))
    os.remove(path)
    assert.are.equal(30 / 1e6, llm.cost("local-model", { input = 10, output = 10 }))
    llm.prices["local-model"] = nil
  end)

  it("answers a repeated request from the cache without a request", function()
    local s = llm.session()
    local h1 = s:complete(oai, msgs("same"), { temperature = 0, seed = 1 })
    assert.is_true(h1.ok)
    local h2 = s:complete(oai, msgs("same"), { seed = 1, temperature = 0 })
    assert.is_true(h2.cached)
    assert.are.equal(h1.text, h2.text)
    assert.are.equal(0, h2.cost)
    assert.are.equal(1, mock:stats().count)
    -- another seed, or no_cache, is another request
    s:complete(oai, msgs("same"), { temperature = 0, seed = 2 })
    s:complete(oai, msgs("same"), { temperature = 0, seed = 1, no_cache = true })
    assert.are.equal(3, mock:stats().count)
    assert.are.equal(1, s.totals.cached)
  end)

  it("caches in the run database across sessions, and no key reaches the file", function()
    local db = os.tmpname()
    os.remove(db)
    mock:script({ default = { text = "```cuda\n__global__ void k() {} // " .. KEY .. "\n```" } })
    local s1 = assert(llm.session({ db = db }))
    local h1 = s1:complete(oai, msgs("persist"))
    assert.is_true(h1.ok, h1.reason)
    assert.is_nil(h1.text:find(KEY, 1, true), "a key in a reply is redacted")
    s1:complete(anth, msgs("persist"))
    s1:close()
    local s2 = assert(llm.session({ db = db }))
    local h2 = s2:complete(oai, msgs("persist"))
    assert.is_true(h2.cached)
    s2:close()
    assert.are.equal(2, mock:stats().count)
    for _, f in ipairs({ db, db .. "-wal", db .. "-shm" }) do
      local bytes = util.read_file(f) or ""
      assert.is_nil(bytes:find(KEY, 1, true), "OpenAI key found in " .. f)
      assert.is_nil(bytes:find(AKEY, 1, true), "Anthropic key found in " .. f)
    end
    local probe = util.capture("sqlite3 " .. db .. " 'select count(*) from llm_cache' 2>/dev/null")
    if probe and probe ~= "" then assert.are.equal("2", probe) end
    os.remove(db) os.remove(db .. "-wal") os.remove(db .. "-shm")
  end)

  it("scrubs a key echoed in an error body, and logs carry no key", function()
    local events = {}
    local s = llm.session({ no_cache = true, log = function(e) events[#events + 1] = cjson.encode(e) end })
    mock:script({ replies = { { status = 401, body = '{"error": {"message": "Incorrect API key provided: ' .. KEY .. '"}}' } } })
    local h = s:complete(oai, msgs("auth"))
    assert.is_false(h.ok)
    assert.matches("HTTP 401", h.reason)
    assert.is_nil(h.reason:find(KEY, 1, true))
    assert.is_nil(cjson.encode({ h.reason, h.kind, h.status }):find(KEY, 1, true))
    assert.is_true(#events >= 2)
    assert.is_nil(table.concat(events, "\n"):find(KEY, 1, true))
  end)

  it("spreads an ensemble over its endpoints", function()
    local s = llm.session({ no_cache = true })
    local hs = {}
    for i = 1, 4 do hs[i] = s:request({ oai, anth }, msgs("e" .. i)) end
    local apis = {}
    for _, h in ipairs(hs) do s:wait(h) assert.is_true(h.ok, h.reason) apis[h.endpoint.api] = (apis[h.endpoint.api] or 0) + 1 end
    assert.are.equal(2, apis.openai)
    assert.are.equal(2, apis.anthropic)
  end)

  it("cancels a call in flight", function()
    mock:script({ default = { delay_s = 2 } })
    local s = llm.session({ no_cache = true })
    local h = s:request(oai, msgs("cancel me"))
    s:poll(50)
    assert.is_true(s:cancel(h))
    assert.are.equal("cancelled", h.kind)
    assert.are.equal(0, s:busy())
  end)

  it("asks with a template and returns the extracted kernel (REPL path)", function()
    local task = {
      name = "scale", entry = "scale", backend = "cuda",
      source = 'extern "C" __global__ void scale(int N, const float *x, float *y) { }\n',
      args = { { name = "N", ctype = "int" }, { name = "x", ctype = "const float*", pointer = true, role = "input", size = "N" },
        { name = "y", ctype = "float*", pointer = true, role = "output", size = "N" } },
      sizes = { bench = { N = 1048576 }, check = { { N = 1000 } } },
      tolerance = { rel = 1e-5, deterministic = "exact" },
      cost = function(sz) return { flops = sz.N, bytes = 8 * sz.N } end,
    }
    local s = llm.session({ no_cache = true })
    local r, err = llm.ask("optimize", { task = task, parent = { source = task.source, result = { verdict = "ok", time_ms = 0.5 } } },
      { endpoint = oai, session = s })
    assert.is_truthy(r, err)
    assert.matches("__global__ void scale", r.kernel)
    assert.are.same({ "grid = {cdiv(N, 256)}, block = {256}" }, r.plans)
    assert.are.equal("optimize", r.prompt)
    assert.are.equal(16, #r.version)
    local req = mock:stats().requests[1]
    assert.truthy(req.body.messages[2].content:find("extern \"C\" __global__ void scale(int N, const float* x, float* y)", 1, true))
    -- a reply without the entry is a failed proposal with a reason
    mock:script({ replies = { { text = "I cannot help with that." } } })
    local r2, why, h = llm.ask("optimize", { task = task, parent = { source = task.source } }, { endpoint = oai, session = s })
    assert.is_nil(r2)
    assert.matches("no code block", why)
    assert.is_true(h.ok)
  end)
end)

-- Issue 13: limits, capabilities, caps, UTF-8; each failed on the code before.
describe("kloop.llm limits and provider rules", function()
  local mock
  setup(function() mock = assert(MOCK.start()) end)
  teardown(function() if mock then mock:stop() end end)
  before_each(function() mock:reset() end)
  local function ep(extra)
    return assert(llm.config(with(FAST, with({ env = {}, model = "m", llm_url = mock.openai_url }, extra))))[1]
  end

  it("ends an attempt whose reply does not start within timeout_s (first byte), then the call at its deadline", function()
    local s = assert(llm.session({ no_cache = true }))
    mock:script({ default = { delay_s = 5 } })
    local t0 = core.now()
    local h = s:complete(ep({ timeout_s = 0.3, deadline_s = 1.2 }), msgs("slow"))
    assert.is_false(h.ok)
    assert.are.equal("deadline", h.kind)
    assert.is_true(core.now() - t0 < 3, "took " .. (core.now() - t0))
    assert.is_true(h.attempts >= 2)
  end)

  it("ends a reply that stalls after its headers at idle_timeout_s", function()
    local s = assert(llm.session({ no_cache = true }))
    mock:script({ replies = { { stall_s = 5 } } })
    local h = s:complete(ep({ idle_timeout_s = 0.3, max_retries = 1 }), msgs("stall"))
    assert.is_true(h.ok, h.reason) -- the retry gets the echo
    assert.are.equal(2, h.attempts)
  end)

  it("takes the limits from the environment and refuses bad values", function()
    local e = assert(llm.config({ env = { KLOOP_LLM_TIMEOUT = "42", KLOOP_LLM_MAX_REPLY = "2M" }, model = "m",
      llm_url = mock.openai_url }))[1]
    assert.are.equal(42, e.timeout_s)
    assert.are.equal(2 * 1048576, e.max_reply_bytes)
    local none, err = llm.config({ env = { KLOOP_LLM_IDLE_TIMEOUT = "-1" }, model = "m", llm_url = mock.openai_url })
    assert.is_nil(none)
    assert.matches("KLOOP_LLM_IDLE_TIMEOUT=-1", err, 1, true)
  end)

  it("caps the reply size: a longer one fails at once, kind too_large", function()
    local s = assert(llm.session({ no_cache = true }))
    mock:script({ default = { pad_mb = 1.5 } })
    local h = s:complete(ep({}), msgs("big"))
    assert.is_false(h.ok)
    assert.are.equal("too_large", h.kind)
    assert.are.equal(1, mock:stats().count)
  end)

  it("sends OpenAI reasoning models max_completion_tokens and no temperature; Anthropic max_tokens", function()
    local body = cjson.decode((llm.build_request({ api = "openai", model = "o3-mini", unsupported = {} }, msgs("x"),
      { temperature = 0.7, max_tokens = 100, seed = 1 })))
    assert.is_nil(body.temperature)
    assert.is_nil(body.max_tokens)
    assert.are.equal(100, body.max_completion_tokens)
    body = cjson.decode((llm.build_request({ api = "openai", model = "gpt-5-mini" }, msgs("x"), { temperature = 0.7 })))
    assert.is_nil(body.temperature)
    body = cjson.decode((llm.build_request({ api = "openai", model = "gpt-4o" }, msgs("x"), { temperature = 0.7, max_tokens = 5 })))
    assert.are.equal(0.7, body.temperature)
    assert.are.equal(5, body.max_tokens)
    body = cjson.decode((llm.build_request({ api = "anthropic", model = "claude-sonnet-4-5", max_tokens = 8192 }, msgs("x"), { seed = 3 })))
    assert.are.equal(8192, body.max_tokens)
    assert.is_nil(body.seed)
  end)

  it("sends a request once more without a parameter the server refuses, and the endpoint remembers", function()
    local s = assert(llm.session({ no_cache = true }))
    local events = {}
    s.log = function(e) events[#events + 1] = e end
    mock:script({ default = { reject_param = "temperature" } })
    local e = ep({})
    local h = s:complete(e, msgs("p"), { temperature = 0.5 })
    assert.is_true(h.ok, h.reason)
    assert.are.equal(2, h.attempts)
    assert.are.same({ "temperature" }, h.dropped_params)
    assert.is_true(e.unsupported.temperature)
    local h2 = s:complete(e, msgs("p2"), { temperature = 0.5 })
    assert.are.equal(1, h2.attempts)
    assert.are.equal(3, mock:stats().count)
    local retried = false
    for _, ev in ipairs(events) do if ev.event == "llm_retry" and ev.why:find("without 'temperature'", 1, true) then retried = true end end
    assert.is_true(retried)
  end)

  it("turns bytes that are not UTF-8 into U+FFFD", function()
    local s = assert(llm.session({ no_cache = true }))
    mock:script({ default = { non_utf8 = true, text = "ok" } })
    local h = s:complete(ep({}), msgs("u"))
    assert.is_true(h.ok, h.reason)
    assert.truthy(h.text:find("\239\191\189", 1, true))
    assert.are.equal(3, h.bad_bytes)
    assert.are.equal("a\239\191\189b", (llm.fix_utf8("a\255b")))
    assert.are.equal("\226\130\172", (llm.fix_utf8("\226\130\172")))
  end)
end)

describe("kloop.llm and child processes", function()
  it("the C compiler's --version probe runs with a filtered environment", function()
    local tmp = os.tmpname()
    util.write_file(tmp .. ".sh", "#!/bin/sh\necho \"fakecc $(env | grep -c PLANTED)\"\n")
    os.execute("chmod +x " .. tmp .. ".sh")
    local cmd = string.format("PLANTED_TOKEN=%s OPENAI_API_KEY=%s CC=%s %s -e %s 2>&1", KEY, KEY, tmp .. ".sh",
      util.shell_quote(core.exe_path()), util.shell_quote('print(require("kloop.eval.compile_host").cc_version())'))
    local out = util.capture(cmd)
    os.remove(tmp .. ".sh")
    assert.are.equal("fakecc 0", (out:gsub("%s+$", "")))
  end)

  it("a worker spawned by kloop never sees the API keys", function()
    local exe = core.exe_path()
    local chunk = [[
      local llm = require("kloop.llm.session")
      assert(llm.config({model = "gpt-4o"}))
      local ffi, C = require("ffi"), require("kloop.core.ffi").C
      local env = require("kloop.eval.evaluator").worker_env
      local argv = ffi.new("const char*[2]")
      argv[0] = "/usr/bin/env"
      local keep = ffi.new("const char*[?]", #env + 1)
      for i, a in ipairs(env) do keep[i - 1] = a end
      local p, err = ffi.new("kl_proc"), ffi.new("kl_err")
      assert(C.kl_proc_spawn(p, argv, keep, err) == 0, ffi.string(err.msg))
      C.kl_proc_close(p, 5000)
      io.write(ffi.string(p.tail, p.tail_len))
    ]]
    local cmd = string.format("OPENAI_API_KEY=%s ANTHROPIC_API_KEY=%s %s -e %s 2>&1", KEY, AKEY,
      util.shell_quote(exe), util.shell_quote(chunk))
    local out = util.capture(cmd)
    assert.truthy(out:find("PATH=", 1, true), "env printed nothing: " .. out)
    assert.is_nil(out:find(KEY, 1, true))
    assert.is_nil(out:find(AKEY, 1, true))
  end)
end)

describe("kloop.llm redaction", function()
  it("scrubs key-shaped words from reasons but leaves code identifiers alone", function()
    assert.are.equal("bad key sk-[redacted] here", llm.redact("bad key sk-abcdefghijklmnop here"))
    assert.are.equal("mask-threshold_value", llm.redact("mask-threshold_value"))
    assert.are.equal("x [redacted] y", llm.redact("x " .. KEY .. " y", KEY, true))
  end)
end)

describe("kl_http", function()
  local ffi, C = core.ffi, core.C
  it("refuses bad arguments through kl_err and reports a refused connection as a result", function()
    local p, err = ffi.new("kl_http*[1]"), ffi.new("kl_err")
    assert.are.equal(0, C.kl_http_new(p, err))
    local c = p[0]
    local id = ffi.new("int64_t[1]")
    assert.are.equal(C.KL_EINVAL, C.kl_http_post(c, "ftp://x", nil, 0, "", 0, 1000, id, err))
    assert.matches("not an http", ffi.string(err.msg))
    assert.are.equal(C.KL_ENOTFOUND, C.kl_http_cancel(c, 12345))
    -- port 9 (discard) is closed on test machines: connection refused, as a result
    assert.are.equal(0, C.kl_http_post(c, "http://127.0.0.1:9/v1/chat/completions", nil, 0, "{}", 2, 2000, id, err))
    assert.are.equal(1, C.kl_http_pending(c))
    local res, done = ffi.new("kl_http_result"), ffi.new("int[1]")
    local t_end = core.now() + 5
    while done[0] == 0 and core.now() < t_end do assert.are.equal(0, C.kl_http_poll(c, 100, res, done, err)) end
    assert.are.equal(1, done[0])
    assert.are.equal(id[0], res.id)
    assert.are.equal(0, res.status)
    assert.are.equal(7, res.curl_code)
    assert.is_true(#ffi.string(res.error) > 0)
    C.kl_http_result_free(res)
    assert.are.equal(0, C.kl_http_pending(c))
    C.kl_http_free(c)
  end)

  it("kloop.core.http wraps it: nil, msg for misuse, a plain table per result, close twice", function()
    local http = require("kloop.core.http")
    local c = assert(http.new())
    local id, err = c:post("ftp://x", {}, "", 1000)
    assert.is_nil(id)
    assert.matches("not an http", err)
    assert.is_false(c:cancel(12345))
    id = assert(c:post("http://127.0.0.1:9/v1/chat/completions", { "Content-Type: application/json" }, "{}",
      { connect_ms = 2000, total_ms = 2000 }))
    assert.are.equal(1, c:pending())
    local res, t_end = false, core.now() + 5
    while res == false and core.now() < t_end do res = c:poll(100) end
    assert.are.equal(id, res.id)
    assert.are.equal(0, res.status)
    assert.are.equal(7, res.curl_code)
    assert.are.equal("", res.body)
    assert.is_false(res.too_big)
    assert.is_true(#res.error > 0)
    assert.are.equal(0, c:pending())
    c:close()
    c:close()
    local r = assert(http.post_wait("http://127.0.0.1:9/x", {}, "{}", 2000))
    assert.are.equal(7, r.curl_code)
  end)

  it("a server that is not there: bounded retries, then a network failure", function()
    local ep = assert(llm.config(with(FAST, { env = {}, model = "m", llm_url = "http://127.0.0.1:9/v1", max_retries = 1 })))[1]
    local h = llm.session({ no_cache = true }):complete(ep, msgs("anyone?"))
    assert.is_false(h.ok)
    assert.are.equal(2, h.attempts)
    assert.matches("connection refused", h.reason)
  end)
end)

describe("kloop.llm records", function()
  local H = { key = "k1", model = "m", latency_s = 0.5, status = 200, usage = { input = 10, output = 20 }, retries = 1,
    cost = 0.25, ok = true, attempts = 2, seq = 7, prompt = { id = "optimize", version = "abcd" },
    params = { temperature = 0.7, seed = 42 }, endpoint = { name = "openai:m@host" } }

  it("call_record fills the store's llm_calls fields from a handle, and the store takes it", function()
    local rec = llm.call_record(H, 3)
    assert.are.same({ candidate_id = 3, request_hash = "k1", model = "m", latency_s = 0.5, http_status = 200,
      tokens_in = 10, tokens_out = 20, retries = 1, cost = 0.25, attempt = 2 }, rec)
    local store = require("kloop.store.db")
    local path = os.tmpname()
    os.remove(path)
    local db = assert(store.open(path))
    local run = assert(db:begin_run { task_name = "t" })
    local r2 = llm.call_record({ key = "k2", model = "m", ok = false, reason = "HTTP 500: x", kind = "http", attempts = 1,
      retries = 0 })
    assert(db:add_llm_call(run, r2))
    local rows = db:query("SELECT request_hash, error, kind FROM llm_calls")
    db:close()
    os.remove(path)
    assert.are.same({ request_hash = "k2", error = "HTTP 500: x", kind = "http" }, rows[1])
  end)

  it("candidate_fields gives a candidate's provenance from its handle", function()
    assert.are.same({ model = "m", prompt_id = "optimize", prompt_hash = "abcd", sampling = H.params, llm_seed = 42,
      tokens_in = 10, tokens_out = 20, cost = 0.25, llm_seq = 7, endpoint = "openai:m@host" }, llm.candidate_fields(H))
  end)
end)
