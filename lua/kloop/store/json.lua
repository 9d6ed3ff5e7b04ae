-- kloop.store.json: JSON for the store's *_json columns (scrubbed first) and deterministic
-- JSON for command output (sorted keys, lists marked as arrays).
local cjson = require("cjson")
local util = require("kloop.util")
local secrets = require("kloop.store.secrets")

local M = {}

-- JSON text of a value after scrubbing (kloop.store.secrets), or nil for nil.
function M.to_json(v)
  if v == nil then return nil end
  return cjson.encode(secrets.scrub(v))
end

-- The value of a stored JSON text; text that does not parse comes back as it is.
function M.from_json(s)
  if s == nil then return nil end
  local ok, v = pcall(cjson.decode, s)
  if ok then return v end
  return s
end

-- Lists that must print as JSON arrays even when empty (cjson has no way to say so).
M.array_mt = { __name = "kloop.store.array" }
function M.array(t) return setmetatable(t or {}, M.array_mt) end

-- Deterministic JSON for command output: sorted keys, marked or dense lists as arrays.
function M.encode(v)
  local out = {}
  local function enc(x, depth)
    local t = type(x)
    if x == nil or x == cjson.null then out[#out + 1] = "null"
    elseif t == "boolean" then out[#out + 1] = tostring(x)
    elseif t == "number" then
      if x ~= x or x == math.huge or x == -math.huge then out[#out + 1] = "null"
      elseif x == math.floor(x) and math.abs(x) < 2^53 then out[#out + 1] = string.format("%d", x)
      else out[#out + 1] = string.format("%.14g", x) end
    elseif t == "string" then out[#out + 1] = cjson.encode(x)
    elseif t == "table" then
      if depth > 64 then error("store.encode: nested too deeply", 0) end
      local n, count = #x, 0
      for _ in pairs(x) do count = count + 1 end
      if getmetatable(x) == M.array_mt or (n > 0 and n == count) then
        out[#out + 1] = "["
        for i = 1, n do
          if i > 1 then out[#out + 1] = "," end
          enc(x[i], depth + 1)
        end
        out[#out + 1] = "]"
      else
        out[#out + 1] = "{"
        for i, k in ipairs(util.sorted_keys(x)) do
          if i > 1 then out[#out + 1] = "," end
          out[#out + 1] = cjson.encode(tostring(k))
          out[#out + 1] = ":"
          enc(x[k], depth + 1)
        end
        out[#out + 1] = "}"
      end
    else
      out[#out + 1] = cjson.encode(tostring(x))
    end
  end
  enc(v, 0)
  return table.concat(out)
end

return M
