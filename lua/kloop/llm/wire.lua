-- kloop.llm.wire: the two wire formats (OpenAI-compatible chat completions, Anthropic
-- messages): request bodies and headers, the provider parameter rules, reply parsing
-- and usage, what an error reply or a transport failure means, and the request key.
-- Pure functions over strings and tables: no network, no state, no secrets kept (the
-- caller passes an endpoint's key to build). Nothing here raises on what a server sends.
--
-- Tool calls (docs/LLM.md, "Tool calls") have one neutral shape for both formats: a tool
-- is {name, description, parameters (a JSON Schema)}, given as params.tools; a call in a
-- reply is {id, name, arguments (a table), raw (the arguments' text as sent), error (why
-- the arguments cannot be used, instead of arguments)}; an assistant message may carry
-- tool_calls, and a tool's result is the message {role = "tool", tool_call_id, content,
-- is_error}. build turns them into each vendor's shape, parse turns replies back.
local cjson = require("cjson")
local util = require("kloop.util")
local sys = require("kloop.core.sys")

local M = {}

M.ANTHROPIC_VERSION = "2023-06-01"

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

-- s on one line, cut to n bytes (300) with "..." (reasons, error messages).
local function excerpt(s, n)
  s = tostring(s or ""):gsub("%s+", " ")
  n = n or 300
  if #s > n then return s:sub(1, n) .. "..." end
  return s
end
M.excerpt = excerpt

local function denull(v) if v == cjson.null then return nil end return v end

-- JSON with sorted keys, so equal requests hash equally.
local canonical = util.canonical_json
M.canonical = canonical

-- Parameters of a request that steer the client, never sent.
local RESERVED = { deadline_s = true, no_cache = true, timeout_s = true }
M.RESERVED = RESERVED

-- The cache key of a request: the content hash of the canonical JSON of the API, URL,
-- model, messages and sent parameters (headers, and so keys, are never part of it).
function M.request_key(ep, messages, params)
  local sendable = {}
  for k, v in pairs(params or {}) do if not RESERVED[k] then sendable[k] = v end end
  return sys.content_hash(canonical({ api = ep.api, url = ep.url, model = ep.model, messages = messages, params = sendable }))
end

-- The JSON body and headers of one call (headers carry `key`, the endpoint's; never
-- stored), and the parameters left out by the capability table or the endpoint's
-- learned refusals (ep.unsupported) or drop_more.
function M.build(ep, messages, params, drop_more, key)
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
  local tools = type(body.tools) == "table" and #body.tools > 0 and body.tools or nil
  body.tools = nil
  if ep.api == "anthropic" then
    local system, msgs = {}, {}
    for _, m in ipairs(messages) do
      if m.role == "system" then system[#system + 1] = m.content else M.anthropic_message(msgs, m) end
    end
    body.messages = msgs
    if #system > 0 then body.system = table.concat(system, "\n\n") end
    body.max_tokens = body.max_tokens or ep.max_tokens -- required there
    if tools then
      body.tools = {}
      for i, t in ipairs(tools) do body.tools[i] = { name = t.name, description = t.description, input_schema = t.parameters } end
    end
    headers[#headers + 1] = "anthropic-version: " .. M.ANTHROPIC_VERSION
    if key then headers[#headers + 1] = "x-api-key: " .. key end
  else
    local msgs = {}
    for i, m in ipairs(messages) do msgs[i] = M.openai_message(m) end
    body.messages = msgs
    if tools then
      body.tools = {}
      for i, t in ipairs(tools) do
        body.tools[i] = { type = "function", ["function"] = { name = t.name, description = t.description, parameters = t.parameters } }
      end
    end
    if key then headers[#headers + 1] = "Authorization: Bearer " .. key end
  end
  return cjson.encode(body), headers, dropped
end

-- ---- tool calls in requests ----

-- The arguments of a call as the JSON text a model sent (or would have).
local function arguments_text(c)
  if type(c.raw) == "string" then return c.raw end
  return cjson.encode(type(c.arguments) == "table" and c.arguments or {})
end

-- One neutral message in OpenAI's shape: tool calls as function calls with their
-- arguments as a JSON string, a tool's result as role "tool".
function M.openai_message(m)
  if m.role == "tool" then return { role = "tool", tool_call_id = m.tool_call_id, content = m.content } end
  if m.role == "assistant" and type(m.tool_calls) == "table" and #m.tool_calls > 0 then
    local calls = {}
    for i, c in ipairs(m.tool_calls) do
      calls[i] = { id = c.id, type = "function", ["function"] = { name = c.name, arguments = arguments_text(c) } }
    end
    return { role = "assistant", content = (m.content and m.content ~= "") and m.content or cjson.null, tool_calls = calls }
  end
  return { role = m.role, content = m.content }
end

-- Appends one neutral message to an Anthropic message list: tool calls as tool_use
-- blocks; a tool's result as a tool_result block of a user message, which takes the
-- results (and a user text) that follow it too, since the roles must alternate.
function M.anthropic_message(msgs, m)
  local blocks
  if m.role == "tool" then
    blocks = { { type = "tool_result", tool_use_id = m.tool_call_id, content = m.content, is_error = m.is_error or nil } }
  elseif m.role == "assistant" and type(m.tool_calls) == "table" and #m.tool_calls > 0 then
    blocks = {}
    if m.content and m.content ~= "" then blocks[1] = { type = "text", text = m.content } end
    for _, c in ipairs(m.tool_calls) do
      local input = type(c.arguments) == "table" and c.arguments or {}
      blocks[#blocks + 1] = { type = "tool_use", id = c.id, name = c.name, input = input }
    end
  end
  local role = m.role == "tool" and "user" or m.role
  local last = msgs[#msgs]
  if role == "user" and last and last.role == "user" and (blocks or type(last.content) == "table") then
    if type(last.content) ~= "table" then last.content = { { type = "text", text = last.content } } end
    for _, b in ipairs(blocks or { { type = "text", text = m.content } }) do last.content[#last.content + 1] = b end
    return
  end
  msgs[#msgs + 1] = { role = role, content = blocks or m.content }
end

-- Text that is valid UTF-8: each byte of a malformed sequence becomes U+FFFD, or
-- `replacement` when given (a reply reaches sources, the store and JSON output; kloop.mcp.json
-- puts "?"); returns the text and the count replaced.
function M.fix_utf8(s, replacement)
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
      out[#out + 1] = replacement or "\239\191\189"
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
function M.parse(ep, raw)
  if raw == nil or raw == "" then return nil, "empty reply body", "malformed" end
  local ok, obj = pcall(cjson.decode, raw)
  if not ok or type(obj) ~= "table" then
    return nil, "malformed JSON reply (truncated?): " .. excerpt(raw, 120), "malformed"
  end
  local text, finish, calls
  local usage = {}
  if ep.api == "anthropic" then
    local content = denull(obj.content)
    if type(content) ~= "table" or #content == 0 then
      return nil, "the reply has no content blocks (stop_reason " .. tostring(denull(obj.stop_reason)) .. ")", "empty"
    end
    local parts = {}
    for _, b in ipairs(content) do
      if type(b) == "table" and b.type == "text" and type(b.text) == "string" then parts[#parts + 1] = b.text end
      if type(b) == "table" and b.type == "tool_use" then
        calls = calls or {}
        local input = denull(b.input)
        local c = M.new_call(b.id, b.name, #calls + 1)
        if type(input) == "table" and (next(input) == nil or #input == 0) then c.arguments = input
        else c.error = "the input is not a JSON object" end
        calls[#calls + 1] = c
      end
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
    calls = M.openai_calls(msg)
    if calls and text == nil then text = "" end
    finish = type(c) == "table" and denull(c.finish_reason) or nil
    local u = denull(obj.usage) or {}
    usage.input = tonumber(denull(u.prompt_tokens)) or 0
    usage.output = tonumber(denull(u.completion_tokens)) or 0
  end
  if (type(text) ~= "string" or text:match("^%s*$")) and not calls then
    return nil, "the reply has no text (finish reason " .. tostring(finish) .. ")", "empty"
  end
  return { text = text, usage = usage, finish = finish, model = denull(obj.model), tool_calls = calls,
    truncated = finish == "length" or finish == "max_tokens" }
end

-- ---- tool calls in replies ----

-- A call's id and name as sent (an id is made up where a compatible server sends none).
function M.new_call(id, name, i)
  id, name = denull(id), denull(name)
  return { id = type(id) == "string" and id ~= "" and id:sub(1, 128) or ("call_" .. i),
    name = type(name) == "string" and name:sub(1, 128) or "" }
end

-- The arguments a model sent as text: a table, or nil, why they cannot be used.
function M.decode_arguments(s)
  if s:match("^%s*$") then return {} end
  local ok, v = pcall(cjson.decode, s)
  if not ok then return nil, "the arguments are not valid JSON (" .. tostring(v):gsub("^.-: ", "") .. ")" end
  if type(v) ~= "table" or (next(v) ~= nil and #v > 0) then return nil, "the arguments are not a JSON object" end
  return v
end

-- OpenAI's message.tool_calls as neutral calls, or nil when there are none. Arguments
-- are a JSON string there; an object (as some compatible servers send) is taken too.
function M.openai_calls(msg)
  local list = type(msg) == "table" and denull(msg.tool_calls) or nil
  if type(list) ~= "table" or #list == 0 then return nil end
  local out = {}
  for i, tc in ipairs(list) do
    local f = type(tc) == "table" and denull(tc["function"]) or nil
    f = type(f) == "table" and f or {}
    local c = M.new_call(type(tc) == "table" and tc.id, f.name, i)
    local a = denull(f.arguments)
    if type(a) == "string" then
      c.raw = a
      c.arguments, c.error = M.decode_arguments(a)
    elseif a == nil then
      c.arguments = {}
    elseif type(a) == "table" and (next(a) == nil or #a == 0) then
      c.arguments = a
    else
      c.error = "the arguments are not a JSON object"
    end
    out[i] = c
  end
  return out
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

-- What a failed transfer (a kloop.core.http result with curl_code ~= 0) means: the
-- reason, and the kind of a failure worth a retry ("timeout", "network"), or nil when
-- retrying cannot help (a bad URL, an unknown host, TLS).
function M.transport_failure(res)
  local code = res.curl_code
  local why = (RETRY_CURL[code] or "network error") .. ": " .. res.error
  if res.timed_out ~= 0 and RETRY_CURL[code] then why = res.error end
  return why, RETRY_CURL[code] and (code == 28 and "timeout" or "network") or nil
end

-- What an HTTP error reply means: kind, reason ("HTTP n: the server's message") and, for
-- kind "param" (a 400 naming a parameter the model does not take), that parameter.
-- Kinds: "quota" (a 429 about money), "auth" (401, 403), "param", "rate_limit" (429)
-- and "retry" (408, 409, 5xx) worth a retry, "http" (any other: final).
function M.classify_error(status, raw)
  local why = string.format("HTTP %d: %s", status, error_message(raw))
  if status == 429 and is_quota(raw) then return "quota", why end
  if status == 401 or status == 403 then return "auth", why end
  if status == 400 then
    local param = unsupported_param(raw)
    if param then return "param", why, param end
  end
  if status == 429 then return "rate_limit", why end
  if status == 408 or status == 409 or status >= 500 then return "retry", why end
  return "http", why
end

return M
