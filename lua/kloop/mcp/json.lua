-- kloop.mcp.json: JSON for the MCP server: one-line encoding that is always valid JSON
-- (NaN and infinities become null, invalid UTF-8 is replaced, empty arrays can be marked)
-- and decoding that returns nil, message instead of raising.
local cjson = require("cjson")
local fix_utf8 = require("kloop.llm.wire").fix_utf8

local M = {}

-- The decoder's null; a field that is JSON null arrives as this value.
M.null = cjson.null

-- Marks a table as a JSON array (an empty Lua table otherwise encodes as {}).
local ARRAY_MT = { __jsontype = "array" }
function M.array(t) return setmetatable(t or {}, ARRAY_MT) end

-- Decodes one JSON text: value, or nil, message.
function M.decode(s)
  local ok, v = pcall(cjson.decode, s)
  if not ok then return nil, tostring(v):gsub("^.-: ", "") end
  return v
end

-- Replaces each byte that does not start or continue a valid UTF-8 sequence with "?",
-- so a compile log or a candidate's output never breaks a client's UTF-8 decoder (the
-- validation is kloop.llm.wire's fix_utf8).
local function valid_utf8(s) return (fix_utf8(s, "?")) end
M.valid_utf8 = valid_utf8

local function is_array(t)
  if getmetatable(t) == ARRAY_MT then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then return false end
    count = count + 1
  end
  return count == n
end

local encode_value

local function encode_table(t, out, depth)
  if depth > 64 then out[#out + 1] = "null" return end
  if is_array(t) then
    out[#out + 1] = "["
    for i = 1, #t do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], out, depth + 1)
    end
    out[#out + 1] = "]"
    return
  end
  -- keys sorted, so the same table always encodes the same way
  local keys = {}
  for k, v in pairs(t) do
    if type(v) ~= "function" and type(v) ~= "userdata" or v == cjson.null then keys[#keys + 1] = tostring(k) end
  end
  table.sort(keys)
  out[#out + 1] = "{"
  for i, k in ipairs(keys) do
    local v = t[k]
    if v == nil then v = t[tonumber(k)] end
    if i > 1 then out[#out + 1] = "," end
    out[#out + 1] = cjson.encode(valid_utf8(k))
    out[#out + 1] = ":"
    encode_value(v, out, depth + 1)
  end
  out[#out + 1] = "}"
end

encode_value = function(v, out, depth)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = cjson.encode(valid_utf8(v))
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = "null"
    elseif v % 1 == 0 and v > -2 ^ 53 and v < 2 ^ 53 then out[#out + 1] = string.format("%d", v)
    else out[#out + 1] = string.format("%.15g", v) end
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "table" then
    encode_table(v, out, depth)
  elseif t == "cdata" then
    encode_value(tonumber(v), out, depth)
  else
    out[#out + 1] = "null" -- nil, cjson.null, functions
  end
end

-- One line of JSON for any Lua value (never raises, never contains a newline).
function M.encode(v)
  local out = {}
  encode_value(v, out, 0)
  return table.concat(out)
end

return M
