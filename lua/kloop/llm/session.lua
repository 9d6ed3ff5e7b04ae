-- kloop.llm.session: the LLM client: a pull-style async API over kloop.core.http, the
-- scheduler (per-endpoint concurrency, retries with backoff, deadlines), accounting,
-- the response cache; and the facade of kloop.llm (configuration, prices and the wire
-- formats live in kloop.llm.config and kloop.llm.wire and are re-exported here).
--
-- Shape (docs/LLM.md):
--   local eps = assert(llm.config{model = "gpt-4o"})      -- a list of endpoints (an ensemble)
--   local h = llm.request(eps, messages, params)          -- returns at once
--   for _, done in ipairs(llm.poll(50)) do ... end        -- finished handles, never blocks longer
--   local h = llm.complete(eps[1], messages)              -- blocking, for the REPL
--   local r = llm.ask("optimize", {task = t, parent = p}) -- template + call + extraction
-- A handle is a plain table: ok, text, reason, kind, status, usage, cost, latency_s,
-- attempts, retries, cached, truncated, prompt = {id, version}, and tool_calls when the
-- model called tools (params.tools offers them: kloop.llm.wire). A failed call is a
-- handle with ok = false and a reason; nothing here raises on what a server sends.
-- Keys (kloop.llm.config) go into a request's headers only when it is sent; every
-- reason, log event and cached reply passes the one scrubber (kloop.store.secrets).
-- Nothing here spawns processes; workers get a stripped environment (eval.worker_env).
local cjson = require("cjson")
local sys = require("kloop.core.sys")
local http_client = require("kloop.core.http")
local config = require("kloop.llm.config")
local wire = require("kloop.llm.wire")
local secrets = require("kloop.store.secrets")
local store = require("kloop.store.db")
local schema = require("kloop.store.schema")
local prompt = require("kloop.llm.prompt")
local extract = require("kloop.llm.extract")

local M = {}

-- ---- the facade: configuration, prices and wire formats (the tables are shared) ----

for _, k in ipairs({ "DEFAULT_OPENAI_URL", "DEFAULT_ANTHROPIC_URL", "HOWTO", "defaults", "ENV_LIMITS", "KEY_VARS",
  "prices", "parse_size", "size_text", "take_keys", "set_prices", "load_prices", "price", "cost" }) do
  M[k] = config[k]
end
M.config = config.endpoints
for _, k in ipairs({ "ANTHROPIC_VERSION", "capabilities", "capability", "canonical", "fix_utf8", "unsupported_param" }) do
  M[k] = wire[k]
end
M.parse_reply = wire.parse

-- The body, headers (with the endpoint's key) and dropped parameters of one call.
function M.build_request(ep, messages, params, drop_more)
  return wire.build(ep, messages, params, drop_more, config.key(ep))
end

-- Removes secrets from text with the one scrubber: every key this process has read (and
-- `key`), and, for reasons and logs (not for reply text, exact_only, where it could hit
-- code), any word shaped like a vendor key.
local function redact(s, key, exact_only)
  if key then secrets.remember(key) end
  return secrets.scrub_text(s, "[redacted]", not exact_only and "sk-[redacted]" or false)
end
M.redact = redact

-- The same for every string of a value (a reply's tool calls: sources, arguments), in
-- place, each made valid UTF-8 like a reply's text.
local function redact_all(v)
  if type(v) == "string" then return (wire.fix_utf8(redact(v, nil, true))) end
  if type(v) == "table" then for k, x in pairs(v) do v[k] = redact_all(x) end end
  return v
end

local excerpt = wire.excerpt

-- ---- caches: get(key) -> string|nil, put(key, string) ----

function M.memory_cache()
  local t = {}
  return {
    kind = "memory",
    get = function(_, key) return t[key] end,
    put = function(_, key, value) t[key] = value return true end,
  }
end

-- A cache in the run database (the store's file, table llm_cache): kloop.store.db's
-- llm_cache, under its old name.
function M.sqlite_cache(path) return store.llm_cache(path) end

-- ---- sessions ----

local Session = {}
Session.__index = Session

-- A session owns one HTTP client, the pending calls, a cache and the run's totals.
-- opts: cache (object with get/put), db (path: SQLite cache in that file), no_cache,
-- log (function(event) for audit; events carry no key), rng (function() -> [0,1)).
function M.session(opts)
  opts = opts or {}
  local self = setmetatable({ opts = opts, byid = {}, pending = {}, ready = {}, inflight = {}, seq = 0 }, Session)
  if opts.no_cache then
    self.cache = nil
  elseif opts.cache then
    self.cache = opts.cache
  elseif opts.db then
    local c, err = M.sqlite_cache(opts.db)
    if not c then return nil, err end
    self.cache = c
  else
    self.cache = M.memory_cache()
  end
  self.log = opts.log or function() end
  self.rng = opts.rng or math.random
  self:reset_totals()
  return self
end

function Session:reset_totals()
  self.totals = { calls = 0, ok = 0, failed = 0, cached = 0, attempts = 0, retries = 0, tokens_in = 0,
    tokens_out = 0, cost = 0, unpriced = 0, latency_s = 0, by_model = {} }
end

-- The session's HTTP client, made on first use: client, or nil, msg.
function Session:client()
  if self.http then return self.http end
  local c, err = http_client.new()
  if not c then return nil, err end
  self.http = c
  return c
end

function Session:close()
  if self.http then
    self.http:close()
    self.http = nil
  end
  self.byid, self.pending, self.inflight = {}, {}, {}
  if self.cache and self.cache.close then self.cache:close() end
end

local function pick(self, eps)
  if eps.api then return eps end
  -- an ensemble: the least loaded endpoint, ties broken round robin
  local best, bload
  self.rr = (self.rr or 0) + 1
  for i = 0, #eps - 1 do
    local ep = eps[(self.rr + i - 1) % #eps + 1]
    local load = (self.inflight[ep.url] or 0) / ep.concurrency
    if not best or load < bload then best, bload = ep, load end
  end
  return best
end

function Session:finish(h, ok, fields)
  h.done, h.ok, h.state = true, ok, "done"
  for k, v in pairs(fields or {}) do h[k] = v end
  if h.reason then h.reason = redact(h.reason) end
  h.latency_s = sys.now() - h.started
  local t = self.totals
  t.calls = t.calls + 1
  t.retries = t.retries + h.retries
  t.attempts = t.attempts + h.attempts
  if h.cached then
    t.cached = t.cached + 1
  else
    t.latency_s = t.latency_s + h.latency_s
  end
  if ok then t.ok = t.ok + 1 else t.failed = t.failed + 1 end
  if h.usage and not h.cached then
    t.tokens_in = t.tokens_in + (h.usage.input or 0)
    t.tokens_out = t.tokens_out + (h.usage.output or 0)
    h.cost = config.cost(h.model, h.usage)
    if h.cost then t.cost = t.cost + h.cost else t.unpriced = t.unpriced + 1 end
    local m = t.by_model[h.model] or { calls = 0, tokens_in = 0, tokens_out = 0, cost = 0 }
    m.calls, m.tokens_in, m.tokens_out = m.calls + 1, m.tokens_in + h.usage.input, m.tokens_out + h.usage.output
    m.cost = m.cost + (h.cost or 0)
    t.by_model[h.model] = m
  elseif h.cached then
    h.cost = 0
  end
  self.ready[#self.ready + 1] = h
  self.log({ event = "llm_done", seq = h.seq, model = h.model, endpoint = h.endpoint.name, ok = ok, kind = h.kind,
    reason = h.reason, status = h.status, attempts = h.attempts, retries = h.retries, cached = h.cached,
    usage = h.usage, cost = h.cost, latency_s = h.latency_s, key = h.key, prompt = h.prompt,
    attempt_s = h.attempt_s, dropped_params = h.dropped_params })
end

-- Starts a call; returns its handle at once (a cache hit is done already).
-- eps: an endpoint or a list (the least loaded is used). params: temperature,
-- max_tokens, seed, ... (sent as given), deadline_s, timeout_s, no_cache.
-- ropts.prompt = {id, version} is recorded on the handle.
function Session:request(eps, messages, params, ropts)
  params, ropts = params or {}, ropts or {}
  assert(type(eps) == "table", "llm.request: endpoint (from llm.config) expected")
  assert(type(messages) == "table" and #messages > 0, "llm.request: messages expected")
  local ep = pick(self, eps)
  self.seq = self.seq + 1
  local now = sys.now()
  local h = { seq = self.seq, endpoint = ep, model = ep.model, messages = messages, params = params, prompt = ropts.prompt,
    compact = ropts.compact,
    state = "queued", done = false, attempts = 0, retries = 0, started = now, not_before = now,
    deadline = now + (params.deadline_s or ep.deadline_s), timeout_s = params.timeout_s or ep.timeout_s }
  h.key = wire.request_key(ep, messages, params)
  h.use_cache = self.cache and not params.no_cache and not ropts.no_cache
  if h.use_cache then
    local hit = self.cache:get(h.key)
    local ok, rec = pcall(cjson.decode, hit or "")
    if hit and ok and type(rec) == "table" and type(rec.text) == "string" then
      self:finish(h, true, { text = rec.text, usage = rec.usage, finish = rec.finish, truncated = rec.truncated,
        tool_calls = type(rec.tool_calls) == "table" and rec.tool_calls or nil, cached = true, status = 200 })
      return h
    end
  end
  self.pending[#self.pending + 1] = h
  self:pump()
  return h
end

function Session:start_attempt(h)
  local http, cerr = self:client()
  if not http then self:finish(h, false, { kind = "internal", reason = cerr }) return end
  local ep = h.endpoint
  local body, headers, dropped = wire.build(ep, h.messages, h.params, h.drop, config.key(ep))
  h.sent_dropped = dropped
  local left = h.deadline - sys.now()
  -- each limit of an attempt is cut to what is left of the call's deadline
  local function ms(x) return math.max(1, math.floor(math.min(x > 0 and x or left, left) * 1000)) end
  local id, err = http:post(ep.url, headers, body, { connect_ms = ms(ep.connect_timeout_s), first_byte_ms = ms(h.timeout_s),
    idle_ms = ms(ep.idle_timeout_s), total_ms = ms(left), max_body = ep.max_reply_bytes > 0 and ep.max_reply_bytes or 0 })
  if not id then
    self:finish(h, false, { kind = "internal", reason = "cannot send: " .. err })
    return
  end
  h.attempts = h.attempts + 1
  h.state = "inflight"
  h.http_id = id
  h.attempt_started = sys.now()
  self.byid[h.http_id] = h
  self.inflight[ep.url] = (self.inflight[ep.url] or 0) + 1
  self.log({ event = "llm_send", seq = h.seq, model = ep.model, endpoint = ep.name, attempt = h.attempts, key = h.key,
    dropped = #dropped > 0 and dropped or nil })
end

-- Starts what may start: per-endpoint limits, retry times, deadlines of queued calls.
function Session:pump()
  local now = sys.now()
  local keep = {}
  for _, h in ipairs(self.pending) do
    local ep = h.endpoint
    if h.cancelled then
      -- dropped
    elseif now >= h.deadline then
      self:finish(h, false, { kind = "deadline", reason = string.format("deadline of %.3g s passed %s", h.deadline - h.started,
        h.last_error and ("(last: " .. h.last_error .. ")") or "before the call could start") })
    elseif h.not_before <= now and (self.inflight[ep.url] or 0) < ep.concurrency then
      self:start_attempt(h)
    else
      keep[#keep + 1] = h
    end
  end
  self.pending = keep
end

function Session:retry(h, why, retry_after_ms, now_please)
  local ep = h.endpoint
  h.last_error = why
  if h.retries >= ep.max_retries and not now_please then
    return self:finish(h, false, { kind = h.kind_hint or "retries",
      reason = string.format("gave up after %d attempts: %s", h.attempts, why) })
  end
  local delay
  if now_please then
    delay = 0
  elseif retry_after_ms and retry_after_ms >= 0 then
    delay = math.min(retry_after_ms / 1000, ep.retry_after_max_s)
  else
    -- exponential backoff with "equal jitter": half fixed, half random
    local b = math.min(ep.backoff_max_s, ep.backoff_base_s * 2 ^ h.retries)
    delay = b / 2 + self.rng() * b / 2
  end
  local now = sys.now()
  if now + delay >= h.deadline then
    return self:finish(h, false, { kind = "deadline",
      reason = string.format("deadline of %.3g s would pass before the next retry (last: %s)", h.deadline - h.started, why) })
  end
  h.retries = h.retries + 1
  h.state = "waiting"
  h.not_before = now + delay
  h.retry_delays = h.retry_delays or {}
  h.retry_delays[#h.retry_delays + 1] = delay
  self.pending[#self.pending + 1] = h
  self.log({ event = "llm_retry", seq = h.seq, model = h.model, endpoint = ep.name, why = redact(why), delay_s = delay,
    attempt = h.attempts, status = h.status, attempt_s = h.attempt_s, key = h.key })
end

-- One finished transfer (a kloop.core.http result): the handle is done, or retried.
function Session:on_result(res)
  local id = res.id
  local h = self.byid[id]
  if not h then return end
  self.byid[id] = nil
  local ep = h.endpoint
  self.inflight[ep.url] = math.max(0, (self.inflight[ep.url] or 1) - 1)
  local status, code = res.status, res.curl_code
  local raw = res.body
  h.status = status
  h.request_id = res.request_id
  h.http_seconds = (h.http_seconds or 0) + res.total_s
  h.attempt_s = sys.now() - (h.attempt_started or h.started)
  if res.too_big then
    return self:finish(h, false, { kind = "too_large", reason = string.format(
      "the reply passed the %s cap and was cut off (not retried; raise it with --llm-max-reply or KLOOP_LLM_MAX_REPLY)",
      config.size_text(ep.max_reply_bytes)) })
  end
  if code ~= 0 then
    local why, retry_kind = wire.transport_failure(res)
    if retry_kind == "timeout" and sys.now() >= h.deadline - 0.001 then
      return self:finish(h, false, { kind = "deadline", reason = string.format("deadline of %.3g s passed (%s)",
        h.deadline - h.started, why) })
    end
    if retry_kind then h.kind_hint = retry_kind return self:retry(h, why) end
    return self:finish(h, false, { kind = "network", reason = why })
  end
  if status >= 200 and status < 300 then
    local r, why, kind = wire.parse(ep, raw)
    if not r then
      -- a body that came but cannot be used still cost tokens when it says so
      return self:finish(h, false, { kind = kind, reason = why, raw = excerpt(redact(raw), 2000) })
    end
    local bad
    r.text, bad = wire.fix_utf8(redact(r.text, nil, true))
    r.tool_calls = redact_all(r.tool_calls)
    if h.use_cache then
      -- a long reply is cached as what the caller extracted from it and an excerpt
      local text = r.text
      if #text > ep.cache_text_max and h.compact then
        local okc, small = pcall(h.compact, text)
        text = okc and type(small) == "string" and small or excerpt(text, ep.cache_text_max)
      end
      self.cache:put(h.key, cjson.encode({ text = text, usage = r.usage, finish = r.finish, truncated = r.truncated,
        tool_calls = r.tool_calls, model = r.model or ep.model, api = ep.api, created = os.time(), prompt = h.prompt }))
    end
    return self:finish(h, true, { text = r.text, usage = r.usage, finish = r.finish, truncated = r.truncated,
      tool_calls = r.tool_calls, served_by = r.model, cached = false, bad_bytes = bad > 0 and bad or nil })
  end
  local class, why, param = wire.classify_error(status, raw)
  if class == "quota" then
    return self:finish(h, false, { kind = "quota", reason = why .. " (a spend or quota limit: not retried)" })
  end
  if class == "auth" then
    return self:finish(h, false, { kind = "auth", reason = why .. string.format(
      " (the server refused the key%s: not retried)", ep.key_env and (" from " .. ep.key_env) or "") })
  end
  if class == "param" and not h.param_retried then
    local sent = h.params[param] ~= nil or (param == "max_completion_tokens" and h.params.max_tokens ~= nil)
    if sent then
      -- once: the same request without it; the endpoint remembers for later requests
      h.param_retried = true
      h.drop = h.drop or {}
      h.drop[param] = true
      ep.unsupported[param] = true
      h.dropped_params = h.dropped_params or {}
      h.dropped_params[#h.dropped_params + 1] = param
      return self:retry(h, why .. " (sent again without '" .. param .. "')", nil, true)
    end
  end
  if class == "rate_limit" or class == "retry" then
    h.kind_hint = class == "rate_limit" and "rate_limit" or "http"
    return self:retry(h, why, res.retry_after_ms)
  end
  return self:finish(h, false, { kind = "http", reason = why })
end

-- Drives the calls for up to wait_ms; returns the handles finished since the last
-- poll (maybe none). Returns as soon as one has finished.
function Session:poll(wait_ms)
  wait_ms = wait_ms or 0
  local t_end = sys.now() + wait_ms / 1000
  while true do
    self:pump()
    local now = sys.now()
    local wait = #self.ready > 0 and 0 or math.max(0, t_end - now)
    for _, h in ipairs(self.pending) do
      wait = math.min(wait, math.max(0, math.min(h.not_before, h.deadline) - now))
    end
    local http = self:client()
    if http and (next(self.byid) or wait > 0) then
      local res, err = http:poll(math.floor(wait * 1000 + 0.5))
      if res == nil then error("kloop.llm: " .. err) end -- the client itself broke: misuse or OOM
      while res do
        self:on_result(res)
        -- collect everything else already finished, without waiting
        res = http:poll(0)
      end
    end
    self:pump()
    if #self.ready > 0 or sys.now() >= t_end or sys.interrupted() then break end
    if #self.pending == 0 and not next(self.byid) then break end
  end
  local out = self.ready
  self.ready = {}
  return out
end

-- Waits for one handle (other finished handles stay for the next poll).
function Session:wait(h, timeout_s, on_tick)
  local t_end = timeout_s and sys.now() + timeout_s
  local others = {}
  while not h.done do
    if t_end and sys.now() >= t_end then break end
    -- a signal is checked here, not left to the hook: this loop may run as a compiled
    -- trace, which never sees the hook (the finished handles stay for the next poll)
    if sys.interrupted() then
      for _, d in ipairs(others) do self.ready[#self.ready + 1] = d end
      sys.check_interrupt() -- raises sys.INTERRUPTED
    end
    for _, d in ipairs(self:poll(200)) do if d ~= h then others[#others + 1] = d end end
    if on_tick and not h.done then on_tick(h) end
    if not h.done and #self.pending == 0 and not next(self.byid) then break end
  end
  for _, d in ipairs(others) do self.ready[#self.ready + 1] = d end
  -- h itself may be in ready (finished inside a poll we did not see): drop it there
  for i = #self.ready, 1, -1 do if self.ready[i] == h then table.remove(self.ready, i) end end
  return h
end

function Session:complete(eps, messages, params, ropts)
  return self:wait(self:request(eps, messages, params, ropts))
end

function Session:cancel(h)
  if h.done then return false end
  h.cancelled = true
  if h.http_id and self.byid[h.http_id] then
    self.http:cancel(h.http_id)
    self.byid[h.http_id] = nil
    self.inflight[h.endpoint.url] = math.max(0, (self.inflight[h.endpoint.url] or 1) - 1)
  end
  self:finish(h, false, { kind = "cancelled", reason = "cancelled" })
  for i = #self.ready, 1, -1 do if self.ready[i] == h then table.remove(self.ready, i) end end
  return true
end

-- Cancels every call not yet done (a run that ends): each is finished as cancelled.
function Session:cancel_all()
  local hs = {}
  for _, h in pairs(self.byid) do hs[#hs + 1] = h end
  for _, h in ipairs(self.pending) do hs[#hs + 1] = h end
  table.sort(hs, function(a, b) return a.seq < b.seq end)
  for _, h in ipairs(hs) do self:cancel(h) end
  return #hs
end

-- The calls in flight or waiting, oldest first: {model, since (seconds), attempts}.
function Session:waiting()
  local out, now = {}, sys.now()
  for _, h in pairs(self.byid) do out[#out + 1] = { model = h.model, since = now - h.started, attempts = h.attempts } end
  for _, h in ipairs(self.pending) do
    if not h.cancelled then out[#out + 1] = { model = h.model, since = now - h.started, attempts = h.attempts } end
  end
  table.sort(out, function(a, b) return a.since > b.since end)
  return out
end

function Session:busy()
  return #self.pending + (function() local n = 0 for _ in pairs(self.byid) do n = n + 1 end return n end)()
end

-- ---- the default session and module-level API ----

local default_session
function M.default()
  if not default_session then default_session = assert(M.session()) end
  return default_session
end
-- Replaces the default session (e.g. with one caching in the run database).
function M.use(session) default_session = session return session end

function M.request(eps, messages, params, ropts) return M.default():request(eps, messages, params, ropts) end
function M.poll(wait_ms) return M.default():poll(wait_ms) end
function M.wait(h, timeout_s) return M.default():wait(h, timeout_s) end
function M.complete(eps, messages, params, ropts) return M.default():complete(eps, messages, params, ropts) end
function M.cancel(h) return M.default():cancel(h) end
function M.totals() return M.default().totals end
function M.reset_totals() return M.default():reset_totals() end

-- One question by hand: renders template `id` with ctx ({task=, gpu=, parent=, best=,
-- attempts=}), asks, extracts the kernel. Returns {kernel, plans, text, handle,
-- prompt, version} or nil, reason, handle. opts: config options, or endpoint =,
-- params =, session =, prompts_dir =.
function M.ask(id, ctx, opts)
  opts = opts or {}
  local eps = opts.endpoint
  if not eps then
    local e, err = config.endpoints(opts)
    if not e then return nil, err end
    eps = e
  end
  local tpl, terr = prompt.load(id, opts)
  if not tpl then return nil, terr end
  ctx = ctx or {}
  local messages, merr = prompt.messages(tpl, prompt.context(ctx))
  if not messages then return nil, merr end
  local s = opts.session or M.default()
  local h = s:complete(eps, messages, opts.params, { prompt = { id = tpl.id, version = tpl.version } })
  if not h.ok then return nil, h.reason, h end
  local entry = ctx.task and ctx.task.entry
  local k, why = extract.extract(h.text, { entry = entry })
  if not k then return nil, why, h end
  return { kernel = k.source, plans = k.plans, text = h.text, handle = h, prompt = tpl.id, version = tpl.version,
    unterminated = k.unterminated }
end

-- ---- what the store keeps of a call ----

-- How a handle fills the fields of an llm_calls row: one getter per field of
-- kloop.store.schema.LLM_CALL_FIELDS that a handle knows (the others, created_at and
-- outcome, are the store's own). The one place that maps a handle to the record.
local CALL_FROM_HANDLE = {
  candidate_id = function(_, candidate_id) return candidate_id end,
  request_hash = function(h) return h.key end,
  model = function(h) return h.model end,
  latency_s = function(h) return h.latency_s end,
  http_status = function(h) return h.status end,
  tokens_in = function(h) return h.usage and h.usage.input end,
  tokens_out = function(h) return h.usage and h.usage.output end,
  retries = function(h) return h.retries end,
  cost = function(h) return h.cost end,
  error = function(h) return (not h.ok) and h.reason or nil end,
  kind = function(h) return h.kind end,
  attempt = function(h) return h.attempts end,
}
do -- a field the schema dropped or renamed is a bug here, found at load
  local known = {}
  for _, f in ipairs(schema.LLM_CALL_FIELDS) do known[f[1]] = true end
  for k in pairs(CALL_FROM_HANDLE) do assert(known[k], "kloop.llm: llm_calls has no field " .. k) end
end

-- The fields the run store keeps for a call (db:add_llm_call, docs/STORE.md).
function M.call_record(h, candidate_id)
  local rec = {}
  for _, f in ipairs(schema.LLM_CALL_FIELDS) do
    local get = CALL_FROM_HANDLE[f[1]]
    if get then rec[f[1]] = get(h, candidate_id) end
  end
  return rec
end

-- The provenance of a candidate made from handle h (db:add_candidate's LLM fields:
-- model, prompt id and version, sampling and seed, tokens and cost), with llm_seq
-- (links the call's llm_calls rows to the candidate) and the endpoint's name.
function M.candidate_fields(h)
  local prompt_ref, params = h.prompt or {}, h.params or {}
  return { model = h.model, prompt_id = prompt_ref.id, prompt_hash = prompt_ref.version, sampling = h.params,
    llm_seed = params.seed, tokens_in = h.usage and h.usage.input, tokens_out = h.usage and h.usage.output,
    cost = h.cost, llm_seq = h.seq, endpoint = h.endpoint and h.endpoint.name }
end

M.extract = function(...) return extract.extract(...) end

return M
