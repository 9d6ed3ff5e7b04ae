-- kloop.store.secrets: the one scrubber: nothing that looks like a credential reaches the
-- store, a log or a reason. One set of rules for every caller: a remembered secret (4+
-- chars) anywhere in a text, a word shaped like a vendor key (sk-...), a bearer token, and
-- in tables the values of fields with a credential name. Callers choose only the marker
-- put in a secret's place (the store writes "[scrubbed]", kloop.llm "[redacted]").
local cjson = require("cjson")
local util = require("kloop.util")

local M = {}

M.MARKER = "[scrubbed]"

-- Words that name a credential. "tokens" (a count: max_tokens, budget.tokens) is not one.
local SECRET_WORDS = { key = true, keys = true, apikey = true, token = true, secret = true, secrets = true,
  password = true, passwd = true, passphrase = true, auth = true, authorization = true, credential = true,
  credentials = true, bearer = true, cookie = true }

-- True when a field or variable name names a credential (api_key, apiKey, DB_PASSWORD).
function M.sensitive_name(name)
  local s = tostring(name):gsub("(%l)(%u)", "%1_%2"):lower()
  for w in s:gmatch("%a+") do
    if SECRET_WORDS[w] then return true end
  end
  -- glued forms (apikey, accesstoken, dbpassword) have no separator to split on
  return s:find("apikey", 1, true) or s:find("password", 1, true) or s:find("secret", 1, true)
    or s:find("accesstoken", 1, true) or s:find("authtoken", 1, true) or false
end

-- The secrets known by value, longest first (so a secret that contains another is
-- replaced whole). Filled on first use with the values (8+ chars) of credential-named
-- environment variables, so a key copied into any text is caught even when it does not
-- start with sk-; then by remember().
local known
local function secrets()
  if known then return known end
  known = {}
  local blob = util.read_file("/proc/self/environ") or ""
  for entry in blob:gmatch("[^%z]+") do
    local k, v = entry:match("^([^=]+)=(.*)$")
    if k and #v >= 8 and M.sensitive_name(k) then M.remember(v) end
  end
  return known
end

-- A secret read elsewhere (kloop.llm keeps the API keys it wipes from the environment):
-- scrubbed from now on wherever it appears. Values under 4 chars are too common to hunt.
function M.remember(v)
  if type(v) ~= "string" or #v < 4 then return end
  local list = secrets()
  for _, x in ipairs(list) do if x == v then return end end
  list[#list + 1] = v
  -- the form a JSON encoder writes ("/" as "\/", quotes escaped) is caught too
  local escaped = cjson.encode(v):sub(2, -2)
  if escaped ~= v then list[#list + 1] = escaped end
  table.sort(list, function(a, b) return #a > #b end)
end

-- A vendor key: "sk-" and 8 or more of [A-Za-z0-9_-], starting a word (so mask-threshold
-- in code is not one).
local KEY_WORD = "%f[%w_%-]sk%-[%w_%-]+"
local function key_word(w) return #w >= 11 end

local function plain(marker) return function() return marker end end

-- Free text with the secret parts replaced by `marker` (default "[scrubbed]") and the rest
-- kept, so logs stay readable. `shape_marker` replaces a key-shaped word (default: marker);
-- false leaves words by their shape alone and replaces only known secrets (reply text,
-- where sk-... may be code).
function M.scrub_text(s, marker, shape_marker)
  if type(s) ~= "string" then return s end
  marker = marker or M.MARKER
  for _, v in ipairs(secrets()) do
    if s:find(v, 1, true) then s = s:gsub(util.escape_pattern(v), plain(marker)) end
  end
  if shape_marker == false then return s end
  shape_marker = shape_marker or marker
  s = s:gsub(KEY_WORD, function(w) if key_word(w) then return shape_marker end end)
  s = s:gsub("([Bb]earer%s+)[%w_%-%.=/+]+", function(b) return b .. marker end)
  return s
end

-- True when a string holds a secret by value or by shape.
local function secret_value(s)
  for w in s:gmatch(KEY_WORD) do if key_word(w) then return true end end
  if s:find("[Bb]earer%s+%S") then return true end
  for _, v in ipairs(secrets()) do
    if s:find(v, 1, true) then return true end
  end
  return false
end

-- A JSON-safe deep copy: credential-named fields and strings holding a secret become the
-- marker (a field name holding one has it replaced), non-finite numbers null, functions
-- dropped, cdata numbers converted. Raises on a cycle or nesting deeper than 64.
local function clean(v, seen, depth)
  local t = type(v)
  if t == "string" then return secret_value(v) and M.MARKER or v end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return cjson.null end
    return v
  end
  if t == "boolean" or v == cjson.null then return v end
  if t == "cdata" then
    local n = tonumber(v)
    if n then return n end
    return tostring(v)
  end
  if t ~= "table" then return nil end
  if seen[v] then error("store: a table that contains itself cannot be stored as JSON", 0) end
  if depth > 64 then error("store: table nested too deeply for JSON", 0) end
  seen[v] = true
  local n, count = #v, 0
  for _ in pairs(v) do count = count + 1 end
  local out = {}
  if n > 0 and n == count then
    for i = 1, n do
      local x = clean(v[i], seen, depth + 1)
      if x == nil then x = cjson.null end
      out[i] = x
    end
  else
    for k, x in pairs(v) do
      local key = M.scrub_text(tostring(k))
      -- (a count or a flag under a credential name, max_tokens = 512 or auth = true, is kept)
      if M.sensitive_name(key) and type(x) ~= "number" and type(x) ~= "boolean" then
        out[key] = M.MARKER
      else
        out[key] = clean(x, seen, depth + 1)
      end
    end
  end
  seen[v] = nil
  return out
end

-- The scrubbed deep copy of a value, for JSON.
function M.scrub(v) return clean(v, {}, 0) end

return M
