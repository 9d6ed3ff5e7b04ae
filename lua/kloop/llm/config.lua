-- kloop.llm.config: LLM endpoints from options and the environment, the API keys, model prices and cost.
--
-- Secrets: API keys are read from the environment only, once: the value is kept in
-- this module and the variable wiped from the process environment (kl_env_scrub:
-- environ, and the bytes /proc/PID/environ shows), so nothing later in this process or
-- its children finds it. Each endpoint's key sits in a weak table keyed by the endpoint
-- (never a field of it, so printing or storing an endpoint shows no key); M.key(ep)
-- gives it to the session, which puts it into a header at send time. Every key read is
-- also told to the one scrubber (kloop.store.secrets), which removes it from every
-- reason, log event, cached reply and stored row.
-- Failure behaviour: a bad setting is nil, message; nothing here raises on input.
local cjson = require("cjson")
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local secrets = require("kloop.store.secrets")
local wire = require("kloop.llm.wire")

local M = {}

M.DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
M.DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"

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
local keys = setmetatable({}, { __mode = "k" })

-- The key of an endpoint from M.endpoints, or nil (a local server without one).
function M.key(ep) return keys[ep] end

-- The variables that hold keys; a `key_env` option names one more.
M.KEY_VARS = { "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KLOOP_LLM_API_KEY", "KLOOP_API_KEY" }
local KEY_SET = {}
for _, k in ipairs(M.KEY_VARS) do KEY_SET[k] = true end
-- name -> value read from the environment, or false when it was unset at that read
local env_keys = {}

-- A key variable: read on first use, then wiped from the environment (the scrubber is
-- told the value first, so it still removes it from what is written); later reads get
-- the kept value. nil when unset or empty.
local function read_key(name)
  local v = env_keys[name]
  if v == nil then
    v = os.getenv(name) or false
    if v == "" then v = false end
    env_keys[name] = v
    if v then
      secrets.remember(v)
      sys.env_scrub(name)
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
    return nil, "LLM URL must start with http:// or https://, got " .. wire.excerpt(base, 100)
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
  keys[ep] = key
  -- a key from opts.env (tests) was never read by read_key: the scrubber learns it here
  if key then secrets.remember(key) end
  return ep
end

-- Endpoints from options and the environment: a list (an ensemble), or nil, message
-- (llm.config).
-- opts: model ("m", "openai:m", "anthropic:m", or "a,b" for several), llm_url, api,
-- key_env, endpoints = {{model=, llm_url=, api=, ...}, ...}, and any of M.defaults;
-- env = {NAME = value} replaces the process environment (tests).
function M.endpoints(opts)
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

return M
