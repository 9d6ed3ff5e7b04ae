-- kloop.mcp.json: JSON for the MCP server: one-line encoding that is always valid JSON
-- (NaN and infinities become null, invalid UTF-8 is replaced, empty arrays can be marked)
-- and decoding that returns nil, message instead of raising.
local cjson = require("cjson")

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
-- so a compile log or a candidate's output never breaks a client's UTF-8 decoder.
local function valid_utf8(s)
  if not s:find("[\128-\255]") then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:byte(i)
    local len = c < 0x80 and 1 or (c >= 0xC2 and c <= 0xDF) and 2 or (c >= 0xE0 and c <= 0xEF) and 3
      or (c >= 0xF0 and c <= 0xF4) and 4 or 0
    local ok = len > 0 and i + len - 1 <= n
    for j = i + 1, ok and i + len - 1 or 0 do
      local d = s:byte(j)
      if d < 0x80 or d > 0xBF then ok = false break end
    end
    if ok and len == 3 then
      local d = s:byte(i + 1)
      if (c == 0xE0 and d < 0xA0) or (c == 0xED and d > 0x9F) then ok = false end
    elseif ok and len == 4 then
      local d = s:byte(i + 1)
      if (c == 0xF0 and d < 0x90) or (c == 0xF4 and d > 0x8F) then ok = false end
    end
    if ok then
      out[#out + 1] = s:sub(i, i + len - 1)
      i = i + len
    else
      out[#out + 1] = "?"
      i = i + 1
    end
  end
  return table.concat(out)
end
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
