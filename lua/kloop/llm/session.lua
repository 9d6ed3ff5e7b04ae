-- kloop.llm.session: the LLM client: endpoints from the environment, a pull-style async API over kl_http, retries, accounting, cache.
--
-- Shape (docs/LLM.md):
--   local eps = assert(llm.config{model = "gpt-4o"})      -- a list of endpoints (an ensemble)
--   local h = llm.request(eps, messages, params)          -- returns at once
--   for _, done in ipairs(llm.poll(50)) do ... end        -- finished handles, never blocks longer
--   local h = llm.complete(eps[1], messages)              -- blocking, for the REPL
--   local r = llm.ask("optimize", {task = t, parent = p}) -- template + call + extraction
-- A handle is a plain table: ok, text, reason, kind, status, usage, cost, latency_s,
-- attempts, retries, cached, truncated, prompt = {id, version}. A failed call is a
-- handle with ok = false and a reason; nothing here raises on what a server sends.
--
-- Secrets: API keys are read from the environment only, once: the value is kept in
-- this module and the variable wiped from the process environment (kl_env_scrub:
-- environ, and the bytes /proc/PID/environ shows), so nothing later in this process or
-- its children finds it. Each endpoint's key sits in a weak table keyed by the endpoint
-- (never a field of it, so printing or storing an endpoint shows no key), is put into
-- a header at send time, and is scrubbed from every reason and cached reply.
-- Nothing here spawns processes; workers get a stripped environment (eval.worker_env).
local core = require("kloop.core.ffi")
local cjson = require("cjson")
local util = require("kloop.util")
local ffi = core.ffi
local C = core.C

local M = {}

M.DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
M.DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
M.ANTHROPIC_VERSION = "2023-06-01"

M.HOWTO = "no LLM configured: set OPENAI_API_KEY (OpenAI; with OPENAI_BASE_URL for another "
  .. "OpenAI-compatible service), or ANTHROPIC_API_KEY (Anthropic), or point --llm-url / KLOOP_LLM_URL "
  .. "at a local OpenAI-compatible server (vLLM, llama.cpp, Ollama: e.g. http://127.0.0.1:11434/v1); "
  .. "then choose a model with --model or KLOOP_MODEL (see docs/LLM.md)"

-- Defaults of an endpoint; every one can be set per endpoint in config options, and
-- the limits also from the environment (M.ENV_LIMITS). The timeouts suit reasoning
-- models, which may think for minutes before the first byte of a (non-streamed) reply.
M.defaults = {
  concurrency = 8,        -- requests in flight per endpoint URL
  connect_timeout_s = 15, -- TCP and TLS connect
  timeout_s = 600,        -- first byte: from sending the request to the first byte of the reply
  idle_timeout_s = 60,    -- once the reply started: the longest silence
  deadline_s = 1800,      -- the whole call, retries included
  max_retries = 4,
  backoff_base_s = 1,     -- first retry waits ~1 s (with jitter), then 2, 4, ...
  backoff_max_s = 30,
  retry_after_max_s = 60, -- a server's retry-after is honoured up to this
  max_tokens = 8192,      -- Anthropic requires it; OpenAI gets it only when given
  max_reply_bytes = 1048576, -- a longer reply is cut off and fails (kind too_large)
  cache_text_max = 16384, -- a longer reply is cached as its kernel and an excerpt only
}

-- Environment variables for the limits (seconds; sizes take k/M suffixes).
M.ENV_LIMITS = {
  timeout_s = "KLOOP_LLM_TIMEOUT", connect_timeout_s = "KLOOP_LLM_CONNECT_TIMEOUT",
  idle_timeout_s = "KLOOP_LLM_IDLE_TIMEOUT", deadline_s = "KLOOP_LLM_DEADLINE",
  max_retries = "KLOOP_LLM_RETRIES", max_reply_bytes = "KLOOP_LLM_MAX_REPLY",
}

-- A size: bytes, or with a k/K (KiB) or m/M (MiB) suffix: "1M", "512k". nil when bad.
function M.parse_size(v)
  if type(v) == "number" then return v > 0 and math.floor(v) or nil end
  if type(v) ~= "string" then return nil end
  local n, unit = v:match("^%s*(%d+%.?%d*)%s*([kKmM]?)[iI]?[bB]?%s*$")
  n = tonumber(n)
  if not n or n <= 0 then return nil end
  local mult = (unit == "k" or unit == "K") and 1024 or (unit == "m" or unit == "M") and 1048576 or 1
  return math.floor(n * mult)
end

function M.size_text(n)
  if n >= 1048576 and n % 1048576 == 0 then return string.format("%d MB", n / 1048576) end
  if n >= 1024 and n % 1024 == 0 then return string.format("%d kB", n / 1024) end
  return string.format("%d bytes", n)
end

-- Provider parameter rules, by model name (the part after a "provider/" prefix):
-- token_param names the output-token limit the model takes, drop lists parameters it
-- refuses. OpenAI's reasoning models (o1, o3, o4, gpt-5) take max_completion_tokens
-- and only the default sampling; Anthropic needs max_tokens and has no seed. The first
-- match wins; a server that still refuses a parameter (HTTP 400 naming it) gets the
-- request once more without it, and the endpoint remembers (ep.unsupported).
M.capabilities = {
  { api = "anthropic", token_param = "max_tokens", drop = { "seed" } },
  { match = "^o%d", token_param = "max_completion_tokens", drop = { "temperature", "top_p", "presence_penalty", "frequency_penalty" } },
  { match = "^gpt%-5", token_param = "max_completion_tokens", drop = { "temperature", "top_p", "presence_penalty", "frequency_penalty" } },
  { token_param = "max_tokens", drop = {} },
}

function M.capability(ep)
  local name = tostring(ep.model or ""):match("([^/]+)$") or ""
  for _, c in ipairs(M.capabilities) do
    if (not c.api or c.api == ep.api) and (not c.match or name:lower():match(c.match)) then return c end
  end
end

-- USD per million tokens. Approximate list prices when written; override them with
-- KLOOP_PRICES (a .json or .lua file) or llm.set_prices{}. Unknown models cost nil
-- (counted as unpriced in the totals), local servers typically.
M.prices = {
  ["gpt-4o"] = { input = 2.5, output = 10 }, ["gpt-4o-mini"] = { input = 0.15, output = 0.6 },
  ["gpt-4.1"] = { input = 2, output = 8 }, ["gpt-4.1-mini"] = { input = 0.4, output = 1.6 },
  ["gpt-4.1-nano"] = { input = 0.1, output = 0.4 },
  ["gpt-5"] = { input = 1.25, output = 10 }, ["gpt-5-mini"] = { input = 0.25, output = 2 },
  ["o3"] = { input = 2, output = 8 }, ["o4-mini"] = { input = 1.1, output = 4.4 },
  ["claude-opus-4"] = { input = 15, output = 75 }, ["claude-sonnet-4"] = { input = 3, output = 15 },
  ["claude-3-5-haiku"] = { input = 0.8, output = 4 }, ["claude-haiku-4-5"] = { input = 1, output = 5 },
}


-- endpoint -> key; weak, so a dropped endpoint drops its reference to the key
local secrets = setmetatable({}, { __mode = "k" })

-- The variables that hold keys; a `key_env` option names one more.
M.KEY_VARS = { "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KLOOP_LLM_API_KEY", "KLOOP_API_KEY" }
local KEY_SET = {}
for _, k in ipairs(M.KEY_VARS) do KEY_SET[k] = true end
-- name -> value read from the environment, or false when it was unset at that read
local env_keys = {}

-- A key variable: read on first use, then wiped from the environment (the store is
-- told the value first, so it still scrubs it from what it writes); later reads get
-- the kept value. nil when unset or empty.
local function read_key(name)
  local v = env_keys[name]
  if v == nil then
    v = os.getenv(name) or false
    if v == "" then v = false end
    env_keys[name] = v
    if v then
      require("kloop.store.db").remember_secret(v)
      C.kl_env_scrub(name)
    end
  end
  return v or nil
end

-- Reads (and so wipes) every key variable, and `extra` if given.
function M.take_keys(extra)
  for _, k in ipairs(M.KEY_VARS) do read_key(k) end
  if type(extra) == "string" and extra ~= "" then read_key(extra) end
end

-- ---- helpers ----

-- env(name, is_key): a value of the environment, or of opts.env (tests) when given.
local function getenv_fn(opts)
  if opts and type(opts.env) == "table" then
    local t = opts.env
    return function(k) local v = t[k] if v == "" then return nil end return v end
  end
  return function(k, is_key)
    if is_key or KEY_SET[k] then return read_key(k) end
    local v = os.getenv(k)
    if v == "" then return nil end
    return v
  end
end

-- Removes keys from text: the endpoint's own key, and (for reasons and logs, not for
-- reply text, where it could hit code) any word shaped like a vendor key.
local function redact(s, key, exact_only)
  if type(s) ~= "string" then return s end
  if key and #key >= 4 then s = s:gsub(util.escape_pattern(key), "[redacted]") end
  for _, k in pairs(secrets) do -- every key this process has read, whichever endpoint
    if #k >= 4 and s:find(k, 1, true) then s = s:gsub(util.escape_pattern(k), "[redacted]") end
  end
  if not exact_only then
    s = s:gsub("%f[%w_%-](sk%-[%w_%-]*)", function(k) return #k >= 12 and "sk-[redacted]" or k end)
  end
  return s
end
M.redact = redact

local function excerpt(s, n)
  s = tostring(s or ""):gsub("%s+", " ")
  n = n or 300
  if #s > n then return s:sub(1, n) .. "..." end
  return s
end

local function denull(v) if v == cjson.null then return nil end return v end

-- JSON with sorted keys, so equal requests hash equally.
local function canonical(v)
  local t = type(v)
  if t == "table" then
    if next(v) == nil then return "{}" end
    if #v > 0 then
      local parts = {}
      for i = 1, #v do parts[i] = canonical(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local parts = {}
    for _, k in ipairs(util.sorted_keys(v)) do parts[#parts + 1] = cjson.encode(tostring(k)) .. ":" .. canonical(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return cjson.encode(v)
end
M.canonical = canonical

local function hash_hex(s)
  return util.hex64(C.kl_hash64(s, #s, 0)) .. util.hex64(C.kl_hash64(s, #s, 0x9e3779b97f4a7c15ULL))
end

-- ---- configuration ----

local function full_url(api, base)
  base = base:gsub("/+$", "")
  if api == "anthropic" then
    if base:match("/messages$") then return base end
    if base:match("/v1$") then return base .. "/messages" end
    return base .. "/v1/messages"
  end
  if base:match("/chat/completions$") then return base end
  return base .. "/chat/completions"
end

local function resolve_one(o, env)
  local spec = o.model
  local api = o.api
  local model = spec
  if type(spec) == "string" then
    local p, rest = spec:match("^(%a+):(.+)$")
    if p == "openai" or p == "anthropic" then api, model = api or p, rest end
  end
  local url = o.llm_url or o.url or env("KLOOP_LLM_URL")
  local oai = env("OPENAI_API_KEY") or env("OPENAI_BASE_URL")
  local anth = env("ANTHROPIC_API_KEY") or env("ANTHROPIC_BASE_URL")
  if not api then
    if url then api = "openai"
    elseif oai and anth then api = (type(model) == "string" and model:match("^claude")) and "anthropic" or "openai"
    elseif oai then api = "openai"
    elseif anth then api = "anthropic"
    else return nil, M.HOWTO end
  end
  if api ~= "openai" and api ~= "anthropic" then
    return nil, "unknown LLM api '" .. tostring(api) .. "' (openai or anthropic)"
  end
  if type(model) ~= "string" or model == "" then
    return nil, "no model chosen: pass --model NAME or set KLOOP_MODEL (several, comma-separated, make an ensemble)"
  end
  local base, key, key_env
  if url then
    -- an explicit URL never receives a vendor's key: only the one named for it
    key_env = o.key_env or "KLOOP_LLM_API_KEY"
    base = url
  elseif api == "openai" then
    key_env = o.key_env or "OPENAI_API_KEY"
    base = env("OPENAI_BASE_URL") or M.DEFAULT_OPENAI_URL
  else
    key_env = o.key_env or "ANTHROPIC_API_KEY"
    base = env("ANTHROPIC_BASE_URL") or M.DEFAULT_ANTHROPIC_URL
  end
  key = env(key_env, true)
  if not key and (base == M.DEFAULT_OPENAI_URL or base == M.DEFAULT_ANTHROPIC_URL) then
    return nil, string.format("%s is not set: %s needs an API key (export %s=...), or use a local server with --llm-url",
      key_env, base, key_env)
  end
  if not base:match("^https?://") then
    return nil, "LLM URL must start with http:// or https://, got " .. excerpt(base, 100)
  end
  local ep = { api = api, model = model, base_url = base, url = full_url(api, base), key_env = key_env, has_key = key ~= nil }
  for k, v in pairs(M.defaults) do ep[k] = v end
  for k in pairs(M.defaults) do if o[k] ~= nil then ep[k] = o[k] end end
  local conc = tonumber(env("KLOOP_LLM_CONCURRENCY") or "")
  if conc and o.concurrency == nil then ep.concurrency = conc end
  for k, var in pairs(M.ENV_LIMITS) do
    local v = env(var)
    if v and o[k] == nil then
      local n = k == "max_reply_bytes" and M.parse_size(v) or tonumber(v)
      if not n or n < 0 or (k == "max_retries" and n ~= math.floor(n)) then
        return nil, string.format("%s=%s: give %s", var, v, k == "max_reply_bytes" and "a size (bytes, or 512k, 1M)"
          or k == "max_retries" and "a whole number" or "seconds (a number >= 0)")
      end
      ep[k] = n
    end
  end
  if type(ep.max_reply_bytes) == "string" then ep.max_reply_bytes = M.parse_size(ep.max_reply_bytes) end
  for _, k in ipairs({ "connect_timeout_s", "timeout_s", "idle_timeout_s", "deadline_s", "max_retries", "max_reply_bytes" }) do
    if type(ep[k]) ~= "number" or ep[k] < 0 then
      return nil, string.format("LLM setting %s: give a number >= 0, got %s", k, tostring(ep[k]))
    end
  end
  ep.unsupported = {}
  ep.name = api .. ":" .. model .. "@" .. (base:match("^https?://([^/]+)") or base)
  secrets[ep] = key
  return ep
end

-- Endpoints from options and the environment: a list (an ensemble), or nil, message.
-- opts: model ("m", "openai:m", "anthropic:m", or "a,b" for several), llm_url, api,
-- key_env, endpoints = {{model=, llm_url=, api=, ...}, ...}, and any of M.defaults;
-- env = {NAME = value} replaces the process environment (tests).
function M.config(opts)
  opts = opts or {}
  local env = getenv_fn(opts)
  if type(opts.env) ~= "table" then M.take_keys(opts.key_env) end
  local list = {}
  if opts.endpoints then
    for i, e in ipairs(opts.endpoints) do
      local o = {}
      for k, v in pairs(opts) do if k ~= "endpoints" then o[k] = v end end
      for k, v in pairs(e) do o[k] = v end
      list[i] = o
    end
  else
    local models = opts.model or env("KLOOP_MODEL")
    if type(models) == "string" and models:find(",", 1, true) then
      for m in models:gmatch("[^,%s]+") do
        local o = {}
        for k, v in pairs(opts) do o[k] = v end
        o.model = m
        list[#list + 1] = o
      end
    else
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.model = models
      list[1] = o
    end
  end
  if #list == 0 then return nil, M.HOWTO end
  local out = {}
  for i, o in ipairs(list) do
    local ep, err = resolve_one(o, env)
    if not ep then return nil, err end
    out[i] = ep
  end
  return out
end

-- ---- prices and accounting ----

function M.set_prices(t)
  for k, v in pairs(t) do
    if type(v) == "table" then
      M.prices[k] = { input = tonumber(v.input or v["in"] or v[1]) or 0, output = tonumber(v.output or v.out or v[2]) or 0 }
    end
  end
end

-- Loads a price file (.json, or a Lua chunk returning a table): true, or nil, err.
function M.load_prices(path)
  local text, err = util.read_file(path)
  if not text then return nil, "cannot read price file " .. path .. ": " .. tostring(err) end
  local t
  if path:match("%.json$") then
    local ok, v = pcall(cjson.decode, text)
    if not ok or type(v) ~= "table" then return nil, path .. ": not a JSON object of prices" end
    t = v
  else
    local fn, perr = loadstring(text, "=" .. path)
    if not fn then return nil, perr end
    setfenv(fn, {})
    local ok, v = pcall(fn)
    if not ok or type(v) ~= "table" then return nil, path .. ": must return a table of prices" end
    t = v
  end
  M.set_prices(t)
  return true
end

do
  local p = os.getenv("KLOOP_PRICES")
  if p and p ~= "" then
    local ok, err = M.load_prices(p)
    if not ok then util.eprintf("kloop: KLOOP_PRICES: %s\n", err) end
  end
end

-- Price of a model: exact name, else the longest listed prefix (dated variants).
function M.price(model)
  if M.prices[model] then return M.prices[model] end
  local best, blen = nil, 0
  for k, v in pairs(M.prices) do
    if #k > blen and model:sub(1, #k) == k then best, blen = v, #k end
  end
  return best
end

function M.cost(model, usage)
  local p = M.price(model or "")
  if not p or not usage then return nil end
  return ((usage.input or 0) * p.input + (usage.output or 0) * p.output) / 1e6
end

-- ---- caches: get(key) -> string|nil, put(key, string) ----

function M.memory_cache()
  local t = {}
  return {
    kind = "memory",
    get = function(_, key) return t[key] end,
    put = function(_, key, value) t[key] = value return true end,
  }
end

-- A cache in the run database (the store's file): table llm_cache.
function M.sqlite_cache(path)
  local db = ffi.new("kl_db*[1]")
  local err = ffi.new("kl_err")
  if C.kl_db_open(path, 0, db, err) ~= 0 then return nil, ffi.string(err.msg) end
  local h = db[0]
  if C.kl_db_exec(h, "CREATE TABLE IF NOT EXISTS llm_cache(key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL)", err) ~= 0 then
    C.kl_db_close(h)
    return nil, ffi.string(err.msg)
  end
  local function stmt(sql)
    local st = ffi.new("kl_stmt*[1]")
    if C.kl_db_prepare(h, sql, st, err) ~= 0 then return nil, ffi.string(err.msg) end
    return st[0]
  end
  local get_st, e1 = stmt("SELECT response FROM llm_cache WHERE key = ?")
  local put_st, e2 = stmt("INSERT OR REPLACE INTO llm_cache(key, response, created) VALUES (?, ?, ?)")
  if not (get_st and put_st) then C.kl_db_close(h) return nil, e1 or e2 end
  local has = ffi.new("int[1]")
  local cache = { kind = "sqlite", path = path }
  function cache:get(key)
    if not h then return nil end
    C.kl_stmt_reset(get_st)
    C.kl_stmt_bind_text(get_st, 1, key, #key)
    local out
    if C.kl_stmt_step(get_st, has, err) == 0 and has[0] == 1 then
      local n = ffi.new("size_t[1]")
      local p = C.kl_stmt_column_text(get_st, 0, n)
      if p ~= nil then out = ffi.string(p, n[0]) end
    end
    C.kl_stmt_reset(get_st)
    return out
  end
  function cache:put(key, value)
    if not h then return nil, "cache closed" end
    C.kl_stmt_reset(put_st)
    C.kl_stmt_bind_text(put_st, 1, key, #key)
    C.kl_stmt_bind_text(put_st, 2, value, #value)
    C.kl_stmt_bind_double(put_st, 3, os.time())
    local st = C.kl_stmt_step(put_st, has, err)
    C.kl_stmt_reset(put_st)
    if st ~= 0 then return nil, ffi.string(err.msg) end
    return true
  end
  function cache:close()
    if h then
      C.kl_stmt_finalize(get_st)
      C.kl_stmt_finalize(put_st)
      C.kl_db_close(h)
      h = nil
    end
  end
  return cache
end

-- ---- protocols ----

local RESERVED = { deadline_s = true, no_cache = true, timeout_s = true }

-- The JSON body and headers of one call (headers carry the key; never stored), and
-- the parameters left out by the capability table or the endpoint's learned refusals.
local function build(ep, messages, params, drop_more)
  local body = { model = ep.model }
  for k, v in pairs(params or {}) do if not RESERVED[k] then body[k] = v end end
  local dropped = {}
  local cap = M.capability(ep) or {}
  local function drop(k)
    if body[k] ~= nil then body[k] = nil dropped[#dropped + 1] = k end
  end
  for _, k in ipairs(cap.drop or {}) do drop(k) end
  for k in pairs(ep.unsupported or {}) do drop(k) end
  for k in pairs(drop_more or {}) do drop(k) end
  local tp = (ep.unsupported or {}).max_tokens and "max_completion_tokens" or cap.token_param
  if tp == "max_completion_tokens" and params and params.max_tokens ~= nil and not (drop_more or {}).max_completion_tokens then
    body.max_completion_tokens = params.max_tokens
    body.max_tokens = nil
  end
  table.sort(dropped)
  local headers = { "Content-Type: application/json", "Accept: application/json" }
  local key = secrets[ep]
  if ep.api == "anthropic" then
    local system, msgs = {}, {}
    for _, m in ipairs(messages) do
      if m.role == "system" then system[#system + 1] = m.content else msgs[#msgs + 1] = { role = m.role, content = m.content } end
    end
    body.messages = msgs
    if #system > 0 then body.system = table.concat(system, "\n\n") end
    body.max_tokens = body.max_tokens or ep.max_tokens -- required there
    headers[#headers + 1] = "anthropic-version: " .. M.ANTHROPIC_VERSION
    if key then headers[#headers + 1] = "x-api-key: " .. key end
  else
    local msgs = {}
    for i, m in ipairs(messages) do msgs[i] = { role = m.role, content = m.content } end
    body.messages = msgs
    if key then headers[#headers + 1] = "Authorization: Bearer " .. key end
  end
  return cjson.encode(body), headers, dropped
end

-- Text that is valid UTF-8: each byte of a malformed sequence becomes U+FFFD (a reply
-- reaches sources, the store and JSON output); returns the text and the count replaced.
function M.fix_utf8(s)
  if type(s) ~= "string" or not s:find("[\128-\255]") then return s, 0 end
  local out, bad, i, n = {}, 0, 1, #s
  local start = 1
  local byte = string.byte
  while i <= n do
    local c = byte(s, i)
    local len = c < 0x80 and 1 or (c >= 0xC2 and c <= 0xDF) and 2 or (c >= 0xE0 and c <= 0xEF) and 3
      or (c >= 0xF0 and c <= 0xF4) and 4 or 0
    local ok = len > 0 and i + len - 1 <= n
    if ok and len > 1 then
      for j = i + 1, i + len - 1 do
        local d = byte(s, j)
        if d < 0x80 or d > 0xBF then ok = false break end
      end
      if ok then
        local d = byte(s, i + 1)
        if (c == 0xE0 and d < 0xA0) or (c == 0xED and d > 0x9F) or (c == 0xF0 and d < 0x90) or (c == 0xF4 and d > 0x8F) then
          ok = false -- overlong, surrogate or beyond U+10FFFF
        end
      end
    end
    if ok then
      i = i + len
    else
      out[#out + 1] = s:sub(start, i - 1)
      out[#out + 1] = "\239\191\189"
      bad = bad + 1
      i = i + 1
      start = i
    end
  end
  if bad == 0 then return s, 0 end
  out[#out + 1] = s:sub(start)
  return table.concat(out), bad
end

-- The parameter a 400 says the model does not take (OpenAI: error.param, or
-- "Unsupported parameter: 'x'" / "Unsupported value: 'x'"; Anthropic: "x: Extra
-- inputs are not permitted"), or nil.
local function unsupported_param(raw)
  local ok, obj = pcall(cjson.decode, raw or "")
  local e = ok and type(obj) == "table" and denull(obj.error) or nil
  local msg = type(e) == "table" and tostring(denull(e.message) or "") or tostring(raw or "")
  local param = type(e) == "table" and type(denull(e.param)) == "string" and e.param or nil
  param = param or msg:match("[Uu]nsupported parameter:? '([%w_]+)'") or msg:match("[Uu]nsupported value:? '([%w_]+)'")
    or msg:match("'([%w_]+)' is not supported") or msg:match("([%w_]+): [Ee]xtra inputs are not permitted")
  if param and (msg:lower():find("unsupported", 1, true) or msg:lower():find("not supported", 1, true)
      or msg:lower():find("not permitted", 1, true)) then
    return param
  end
end
M.unsupported_param = unsupported_param

-- Parses a 2xx body: {text, usage, finish, truncated, model} or nil, reason, kind.
local function parse(ep, raw)
  if raw == nil or raw == "" then return nil, "empty reply body", "malformed" end
  local ok, obj = pcall(cjson.decode, raw)
  if not ok or type(obj) ~= "table" then
    return nil, "malformed JSON reply (truncated?): " .. excerpt(raw, 120), "malformed"
  end
  local text, finish, usage = nil, nil, {}
  if ep.api == "anthropic" then
    local content = denull(obj.content)
    if type(content) ~= "table" or #content == 0 then
      return nil, "the reply has no content blocks (stop_reason " .. tostring(denull(obj.stop_reason)) .. ")", "empty"
    end
    local parts = {}
    for _, b in ipairs(content) do
      if type(b) == "table" and b.type == "text" and type(b.text) == "string" then parts[#parts + 1] = b.text end
    end
    text = table.concat(parts)
    finish = denull(obj.stop_reason)
    local u = denull(obj.usage) or {}
    usage.input = tonumber(denull(u.input_tokens)) or 0
    usage.input = usage.input + (tonumber(denull(u.cache_read_input_tokens)) or 0) + (tonumber(denull(u.cache_creation_input_tokens)) or 0)
    usage.output = tonumber(denull(u.output_tokens)) or 0
  else
    local choices = denull(obj.choices)
    if type(choices) ~= "table" or #choices == 0 then
      local e = denull(obj.error)
      if type(e) == "table" then return nil, "error in reply: " .. excerpt(denull(e.message), 200), "http" end
      return nil, "the reply has no choices", "empty"
    end
    local c = choices[1]
    local msg = type(c) == "table" and denull(c.message) or nil
    local content = type(msg) == "table" and denull(msg.content) or nil
    if type(content) == "table" then -- content parts
      local parts = {}
      for _, p in ipairs(content) do if type(p) == "table" and type(p.text) == "string" then parts[#parts + 1] = p.text end end
      content = table.concat(parts)
    end
    text = content
    finish = type(c) == "table" and denull(c.finish_reason) or nil
    local u = denull(obj.usage) or {}
    usage.input = tonumber(denull(u.prompt_tokens)) or 0
    usage.output = tonumber(denull(u.completion_tokens)) or 0
  end
  if type(text) ~= "string" or text:match("^%s*$") then
    return nil, "the reply has no text (finish reason " .. tostring(finish) .. ")", "empty"
  end
  return { text = text, usage = usage, finish = finish, model = denull(obj.model),
    truncated = finish == "length" or finish == "max_tokens" }
end

-- Error message from an error body ({"error": {"message": ...}} in both protocols).
local function error_message(raw)
  local ok, obj = pcall(cjson.decode, raw or "")
  if ok and type(obj) == "table" then
    local e = denull(obj.error)
    if type(e) == "table" then
      return excerpt(denull(e.message) or denull(e.type) or raw, 300), denull(e.type), denull(e.code)
    elseif type(e) == "string" then
      return excerpt(e, 300)
    end
  end
  return excerpt(raw, 300)
end

-- A 429 that means "no more money", not "slow down": retrying cannot help.
local function is_quota(raw)
  local msg, etype, code = error_message(raw)
  local s = (tostring(etype) .. " " .. tostring(code) .. " " .. tostring(msg) .. " " .. tostring(raw)):lower()
  return s:find("insufficient_quota", 1, true) or s:find("billing", 1, true) or s:find("spend limit", 1, true)
    or s:find("credit balance", 1, true) or s:find("quota exceeded", 1, true) ~= nil
end

-- curl codes worth a retry: could not connect, reset, empty reply, partial, timeout, HTTP/2 stream.
local RETRY_CURL = { [7] = "connection refused", [16] = "HTTP/2 error", [18] = "partial reply", [28] = "attempt timed out",
  [52] = "empty reply (connection dropped)", [55] = "send failed", [56] = "connection reset", [92] = "HTTP/2 stream error" }

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

function Session:client()
  if self.http then return self.http end
  local p = ffi.new("kl_http*[1]")
  local err = ffi.new("kl_err")
  if C.kl_http_new(p, err) ~= 0 then return nil, ffi.string(err.msg) end
  self.http = ffi.gc(p[0], C.kl_http_free)
  return self.http
end

function Session:close()
  if self.http then
    ffi.gc(self.http, nil)
    C.kl_http_free(self.http)
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
  if h.reason then h.reason = redact(h.reason, secrets[h.endpoint]) end
  h.latency_s = core.now() - h.started
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
    h.cost = M.cost(h.model, h.usage)
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
  local now = core.now()
  local h = { seq = self.seq, endpoint = ep, model = ep.model, messages = messages, params = params, prompt = ropts.prompt,
    compact = ropts.compact,
    state = "queued", done = false, attempts = 0, retries = 0, started = now, not_before = now,
    deadline = now + (params.deadline_s or ep.deadline_s), timeout_s = params.timeout_s or ep.timeout_s }
  local sendable = {}
  for k, v in pairs(params) do if not RESERVED[k] then sendable[k] = v end end
  h.key = hash_hex(canonical({ api = ep.api, url = ep.url, model = ep.model, messages = messages, params = sendable }))
  h.use_cache = self.cache and not params.no_cache and not ropts.no_cache
  if h.use_cache then
    local hit = self.cache:get(h.key)
    local ok, rec = pcall(cjson.decode, hit or "")
    if hit and ok and type(rec) == "table" and type(rec.text) == "string" then
      self:finish(h, true, { text = rec.text, usage = rec.usage, finish = rec.finish, truncated = rec.truncated,
        cached = true, status = 200 })
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
  local body, headers, dropped = build(ep, h.messages, h.params, h.drop)
  h.sent_dropped = dropped
  local left = h.deadline - core.now()
  local function ms(x) return math.max(1, math.floor(math.min(x > 0 and x or left, left) * 1000)) end
  local lim = ffi.new("kl_http_limits")
  lim.connect_ms = ms(ep.connect_timeout_s)
  lim.first_byte_ms = ms(h.timeout_s)
  lim.idle_ms = ms(ep.idle_timeout_s)
  lim.total_ms = ms(left)
  lim.max_body = ep.max_reply_bytes > 0 and ep.max_reply_bytes or 0
  local hdr = ffi.new("const char*[?]", #headers)
  for i, s in ipairs(headers) do hdr[i - 1] = s end
  local id = ffi.new("int64_t[1]")
  local err = ffi.new("kl_err")
  local st = C.kl_http_post_ex(http, ep.url, hdr, #headers, body, #body, lim, id, err)
  headers = nil
  if st ~= 0 then
    self:finish(h, false, { kind = "internal", reason = "cannot send: " .. ffi.string(err.msg) })
    return
  end
  h.attempts = h.attempts + 1
  h.state = "inflight"
  h.http_id = tonumber(id[0])
  h.attempt_started = core.now()
  self.byid[h.http_id] = h
  self.inflight[ep.url] = (self.inflight[ep.url] or 0) + 1
  self.log({ event = "llm_send", seq = h.seq, model = ep.model, endpoint = ep.name, attempt = h.attempts, key = h.key,
    dropped = #dropped > 0 and dropped or nil })
end

-- Starts what may start: per-endpoint limits, retry times, deadlines of queued calls.
function Session:pump()
  local now = core.now()
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
  local now = core.now()
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
  self.log({ event = "llm_retry", seq = h.seq, model = h.model, endpoint = ep.name, why = redact(why, secrets[ep]), delay_s = delay,
    attempt = h.attempts, status = h.status, attempt_s = h.attempt_s, key = h.key })
end

function Session:on_result(res)
  local id = tonumber(res.id)
  local h = self.byid[id]
  if not h then return end
  self.byid[id] = nil
  local ep = h.endpoint
  self.inflight[ep.url] = math.max(0, (self.inflight[ep.url] or 1) - 1)
  local status, code = res.status, res.curl_code
  local raw = res.body ~= nil and ffi.string(res.body, res.body_len) or ""
  h.status = status
  h.request_id = ffi.string(res.request_id)
  h.http_seconds = (h.http_seconds or 0) + res.total_s
  h.attempt_s = core.now() - (h.attempt_started or h.started)
  if res.too_big ~= 0 then
    return self:finish(h, false, { kind = "too_large", reason = string.format(
      "the reply passed the %s cap and was cut off (not retried; raise it with --llm-max-reply or KLOOP_LLM_MAX_REPLY)",
      M.size_text(ep.max_reply_bytes)) })
  end
  if code ~= 0 then
    local why = (RETRY_CURL[code] or "network error") .. ": " .. ffi.string(res.error)
    if res.timed_out ~= 0 and RETRY_CURL[code] then why = ffi.string(res.error) end
    if code == 28 and core.now() >= h.deadline - 0.001 then
      return self:finish(h, false, { kind = "deadline", reason = string.format("deadline of %.3g s passed (%s)",
        h.deadline - h.started, why) })
    end
    if RETRY_CURL[code] then h.kind_hint = code == 28 and "timeout" or "network" return self:retry(h, why) end
    return self:finish(h, false, { kind = "network", reason = why })
  end
  if status >= 200 and status < 300 then
    local r, why, kind = parse(ep, raw)
    if not r then
      -- a body that came but cannot be used still cost tokens when it says so
      return self:finish(h, false, { kind = kind, reason = why, raw = excerpt(redact(raw, secrets[ep]), 2000) })
    end
    local bad
    r.text, bad = M.fix_utf8(redact(r.text, secrets[ep], true))
    if h.use_cache then
      -- a long reply is cached as what the caller extracted from it and an excerpt
      local text = r.text
      if #text > ep.cache_text_max and h.compact then
        local okc, small = pcall(h.compact, text)
        text = okc and type(small) == "string" and small or excerpt(text, ep.cache_text_max)
      end
      self.cache:put(h.key, cjson.encode({ text = text, usage = r.usage, finish = r.finish, truncated = r.truncated,
        model = r.model or ep.model, api = ep.api, created = os.time(), prompt = h.prompt }))
    end
    return self:finish(h, true, { text = r.text, usage = r.usage, finish = r.finish, truncated = r.truncated,
      served_by = r.model, cached = false, bad_bytes = bad > 0 and bad or nil })
  end
  local msg = error_message(raw)
  local why = string.format("HTTP %d: %s", status, msg)
  if status == 429 and is_quota(raw) then
    return self:finish(h, false, { kind = "quota", reason = why .. " (a spend or quota limit: not retried)" })
  end
  if status == 401 or status == 403 then
    return self:finish(h, false, { kind = "auth", reason = why .. string.format(
      " (the server refused the key%s: not retried)", ep.key_env and (" from " .. ep.key_env) or "") })
  end
  if status == 400 and not h.param_retried then
    local param = unsupported_param(raw)
    local sent = param and (h.params[param] ~= nil or (param == "max_completion_tokens" and h.params.max_tokens ~= nil))
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
  if status == 408 or status == 409 or status == 429 or status >= 500 then
    h.kind_hint = status == 429 and "rate_limit" or "http"
    return self:retry(h, why, res.retry_after_ms)
  end
  return self:finish(h, false, { kind = "http", reason = why })
end

-- Drives the calls for up to wait_ms; returns the handles finished since the last
-- poll (maybe none). Returns as soon as one has finished.
function Session:poll(wait_ms)
  wait_ms = wait_ms or 0
  local t_end = core.now() + wait_ms / 1000
  local res = ffi.new("kl_http_result")
  local done = ffi.new("int[1]")
  local err = ffi.new("kl_err")
  while true do
    self:pump()
    local now = core.now()
    local wait = #self.ready > 0 and 0 or math.max(0, t_end - now)
    for _, h in ipairs(self.pending) do
      wait = math.min(wait, math.max(0, math.min(h.not_before, h.deadline) - now))
    end
    local http = self:client()
    if http and (next(self.byid) or wait > 0) then
      local st = C.kl_http_poll(http, math.floor(wait * 1000 + 0.5), res, done, err)
      if st ~= 0 then error("kloop.llm: " .. ffi.string(err.msg)) end -- the client itself broke: misuse or OOM
      if done[0] == 1 then
        self:on_result(res)
        C.kl_http_result_free(res)
        -- collect everything else already finished, without waiting
        repeat
          C.kl_http_poll(http, 0, res, done, err)
          if done[0] == 1 then self:on_result(res) C.kl_http_result_free(res) end
        until done[0] ~= 1
      end
    end
    self:pump()
    if #self.ready > 0 or core.now() >= t_end or C.kl_sigint_pending() > 0 then break end
    if #self.pending == 0 and not next(self.byid) then break end
  end
  local out = self.ready
  self.ready = {}
  return out
end

-- Waits for one handle (other finished handles stay for the next poll).
function Session:wait(h, timeout_s, on_tick)
  local t_end = timeout_s and core.now() + timeout_s
  local others = {}
  while not h.done do
    if t_end and core.now() >= t_end then break end
    -- a signal is checked here, not left to the hook: this loop may run as a compiled
    -- trace, which never sees the hook (the finished handles stay for the next poll)
    if C.kl_sigint_pending() > 0 then
      for _, d in ipairs(others) do self.ready[#self.ready + 1] = d end
      error("interrupted", 0)
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
    C.kl_http_cancel(self.http, h.http_id)
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
  local out, now = {}, core.now()
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
  local prompt = require("kloop.llm.prompt")
  local extract = require("kloop.llm.extract")
  local eps = opts.endpoint
  if not eps then
    local e, err = M.config(opts)
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

-- The fields the run store keeps for a call (db:add_llm_call, docs/STORE.md).
function M.call_record(h, candidate_id)
  return {
    candidate_id = candidate_id, request_hash = h.key, model = h.model, latency_s = h.latency_s,
    http_status = h.status, tokens_in = h.usage and h.usage.input, tokens_out = h.usage and h.usage.output,
    retries = h.retries, cost = h.cost, error = (not h.ok) and h.reason or nil, kind = h.kind, attempts = h.attempts,
    prompt_id = h.prompt and h.prompt.id, prompt_hash = h.prompt and h.prompt.version, cached = h.cached,
  }
end

M.parse_reply = parse
M.build_request = build
M.extract = function(...) return require("kloop.llm.extract").extract(...) end

return M
