-- kloop.mcp.schema: checks a decoded JSON value against the small JSON Schema subset the
-- tool definitions use (type, properties, required, additionalProperties, enum,
-- minimum/maximum, minLength/maxLength, pattern, items/maxItems, maxProperties,
-- propertyNames); an error names the field by its path, e.g. "arguments.a.source".
local json = require("kloop.mcp.json")

local M = {}

-- The JSON Schema regexes the tool definitions use, as Lua patterns.
local PATTERNS = {
  ["^[A-Za-z_][A-Za-z0-9_]*$"] = "^[%a_][%w_]*$",
  ["^sm_[0-9]+a?$"] = "^sm_%d+a?$",
}

local function json_type(v)
  local t = type(v)
  if v == json.null then return "null" end
  if t == "number" then return (v % 1 == 0 and v == v) and "integer" or "number" end
  if t == "table" then
    if next(v) == nil then return "empty" end -- {} and [] decode alike
    return #v > 0 and "array" or "object"
  end
  return t -- string, boolean
end

local function type_ok(want, got)
  if want == got then return true end
  if want == "number" and got == "integer" then return true end
  if got == "empty" and (want == "object" or want == "array") then return true end
  return false
end

local function type_name(want)
  if type(want) == "table" then return table.concat(want, " or ") end
  return want == "integer" and "an integer" or want == "object" and "an object" or want == "array" and "an array"
    or want == "string" and "a string" or want == "number" and "a number" or want == "boolean" and "a boolean" or want
end

-- Checks value against schema: true, or nil, message, field (the path of the bad part).
function M.check(schema, value, path)
  local got = json_type(value)
  local want = schema.type
  if want then
    local ok = false
    for _, w in ipairs(type(want) == "table" and want or { want }) do
      if type_ok(w, got) then ok = true break end
    end
    if not ok then
      return nil, string.format("%s: must be %s, got %s", path, type_name(want), got == "empty" and "an empty table" or got),
        path
    end
  end
  if schema.enum then
    local ok = false
    for _, e in ipairs(schema.enum) do if e == value then ok = true break end end
    if not ok then
      return nil, string.format("%s: must be one of %s", path, table.concat(schema.enum, ", ")), path
    end
  end
  if got == "integer" or got == "number" then
    if schema.minimum and value < schema.minimum then
      return nil, string.format("%s: must be at least %s", path, tostring(schema.minimum)), path
    end
    if schema.maximum and value > schema.maximum then
      return nil, string.format("%s: must be at most %s", path, tostring(schema.maximum)), path
    end
  elseif got == "string" then
    if schema.maxLength and #value > schema.maxLength then
      return nil, string.format("%s: too long (%d bytes; at most %d)", path, #value, schema.maxLength), path
    end
    if schema.minLength and #value < schema.minLength then
      return nil, string.format("%s: must not be empty", path), path
    end
    local pat = schema.pattern and PATTERNS[schema.pattern]
    if pat and not value:match(pat) then
      return nil, string.format("%s: must match %s", path, schema.pattern), path
    end
  elseif got == "array" or (got == "empty" and schema.type == "array") then
    if schema.maxItems and #value > schema.maxItems then
      return nil, string.format("%s: at most %d items", path, schema.maxItems), path
    end
    for i, item in ipairs(value) do
      if schema.items then
        local ok, err, field = M.check(schema.items, item, path .. "[" .. (i - 1) .. "]")
        if not ok then return nil, err, field end
      end
    end
  end
  if got == "object" or (got == "empty" and schema.type == "object") then
    local n = 0
    for k, v in pairs(value) do
      n = n + 1
      local kpath = path .. "." .. tostring(k)
      if type(k) ~= "string" then return nil, path .. ": keys must be strings", path end
      local pat = schema.propertyNames and PATTERNS[schema.propertyNames.pattern]
      if pat and not k:match(pat) then
        return nil, string.format("%s: not a valid name (letters, digits, _)", kpath), kpath
      end
      local sub = schema.properties and schema.properties[k]
      if sub then
        local ok, err, field = M.check(sub, v, kpath)
        if not ok then return nil, err, field end
      elseif schema.additionalProperties == false then
        local names = {}
        for name in pairs(schema.properties or {}) do names[#names + 1] = name end
        table.sort(names)
        return nil, string.format("%s: unknown field (known: %s)", kpath,
          #names > 0 and table.concat(names, ", ") or "none"), kpath
      elseif type(schema.additionalProperties) == "table" then
        local ok, err, field = M.check(schema.additionalProperties, v, kpath)
        if not ok then return nil, err, field end
      end
    end
    if schema.maxProperties and n > schema.maxProperties then
      return nil, string.format("%s: at most %d fields", path, schema.maxProperties), path
    end
    for _, name in ipairs(schema.required or {}) do
      if value[name] == nil then
        return nil, string.format("%s.%s: required", path, name), path .. "." .. name
      end
    end
  end
  return true
end

return M
