-- kloop.eval.task_fields: the strictness of task sidecars: the error every mistake raises
-- (file, field, problem, fix), every field a sidecar may set, "did you mean" for the
-- others, and a readable name for a value of the wrong type.
local M = {}

-- The error every sidecar mistake raises: file, field, problem, fix.
local TaskError = {}
TaskError.__index = TaskError
TaskError.__tostring = function(e) return e.message end

function M.fail(file, field, problem, fix)
  local msg = string.format("%s: %s: %s", file, field, problem)
  if fix then msg = msg .. " (fix: " .. fix .. ")" end
  error(setmetatable({ message = msg, file = file, field = field }, TaskError), 0)
end
local fail = M.fail

-- Edit distance with adjacent swaps counted once ("cahce" is one edit from "cache").
function M.edit_distance(a, b)
  local la, lb = #a, #b
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    local ai = a:byte(i)
    for j = 1, lb do
      local cost = ai == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and ai == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end

-- The name in `names` closest to `word`, when it is close enough to be a typo of it.
function M.closest(word, names)
  word = tostring(word)
  local best, bd
  for _, n in ipairs(names) do
    local d = M.edit_distance(word:lower(), n:lower())
    if not bd or d < bd or (d == bd and n < best) then best, bd = n, d end
  end
  if best and bd <= math.max(1, math.min(3, math.floor(#word / 3))) then return best end
  return nil
end

-- How a value reads in a message: the string "60", the number 5, a function.
function M.describe(v)
  local ty = type(v)
  if ty == "string" then return string.format("the string %q", #v > 40 and (v:sub(1, 40) .. "...") or v) end
  if ty == "number" or ty == "boolean" then return string.format("the %s %s", ty, tostring(v)) end
  if ty == "nil" then return "nothing" end
  return "a " .. ty
end
local describe = M.describe

-- The keys of t in a stable order (grouped by type; numbers and strings sorted).
function M.sorted_any(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out, function(a, b)
    if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
    return type(a) < type(b)
  end)
  return out
end
local sorted_any = M.sorted_any

-- Refuses every key of t that is not in `fields` (a list of names; numbers 1..`list`
-- are allowed positional entries). `where` prefixes the field in the message.
function M.known_fields(file, where, t, fields, list)
  local set = {}
  for _, f in ipairs(fields) do set[f] = true end
  for _, k in ipairs(sorted_any(t)) do
    if type(k) == "number" and list and k >= 1 and k <= list and k == math.floor(k) then
      -- a positional entry this table takes
    elseif type(k) ~= "string" then
      fail(file, (where ~= "" and where or "the task table"),
        string.format("unexpected entry [%s] = %s (fields are named: %s)", tostring(k), describe(t[k]),
          table.concat(fields, ", ")),
        "write NAME = value")
    elseif not set[k] then
      local field = where ~= "" and (where .. "." .. k) or k
      local near = M.closest(k, fields)
      if near then
        fail(file, field, string.format("unknown field '%s'; did you mean '%s'?", k, near),
          string.format("rename it %s", near))
      end
      fail(file, field, string.format("unknown field '%s' (known here: %s)", k, table.concat(fields, ", ")),
        "remove it or use one of the known fields")
    end
  end
end

-- Refuses a value whose type is not one of `types` ("number", {"string", "function"}).
function M.want(file, field, v, types, fix)
  if type(types) == "string" then types = { types } end
  for _, ty in ipairs(types) do if type(v) == ty then return v end end
  fail(file, field, string.format("expected %s, got %s", table.concat(types, " or "), describe(v)), fix)
end

-- Refuses a string that is not one of `values`, with the closest as the fix.
function M.one_of(file, field, v, values, example)
  M.want(file, field, v, "string", example)
  for _, x in ipairs(values) do if v == x then return v end end
  local near = M.closest(v, values)
  fail(file, field, string.format("'%s' is not one of %s%s", v, table.concat(values, ", "),
    near and string.format("; did you mean '%s'?", near) or ""), near and (field:match("[^.]+$") .. " = \"" .. near .. "\"") or example)
end

-- Refuses a table that is not a plain list (keys 1..#v), naming the first stray entry.
function M.check_list(file, v, field, fix)
  for _, k in ipairs(sorted_any(v)) do
    if type(k) ~= "number" or k < 1 or k > #v or k ~= math.floor(k) then
      fail(file, field, string.format("must be a list, but has the entry [%s] = %s", type(k) == "string"
        and string.format("%q", k) or tostring(k), describe(v[k])), fix)
    end
  end
end

-- Refuses a value that is not of type `want` ("expected a table, got nil").
function M.check_type(file, field, v, want, fix)
  if type(v) ~= want then
    fail(file, field, string.format("expected a %s, got %s", want, type(v)), fix)
  end
end

M.FIELDS = {
  task = { "name", "entry", "kernel", "args", "sizes", "launch", "reference", "tolerance", "cost", "unit",
    "params", "constraint", "options", "metrics", "deadline", "deadline_factor", "device_heap", "static_data",
    "flush_cache", "check", "library", "symbols", "sizes_as_defines" },
  sizes = { "bench", "check", "hidden", "promote" },
  promote = { "count", "max_bytes", "extra" },
  promote_dim = { "min", "max", "multiple_of", "values" },
  arg = { "size", "init", "input", "output", "inout", "scratch", "value", "type" },
  symbol = { "count", "init" },
  reference = { "source", "entry", "precision", "launch" },
  tolerance = { "rel", "max_abs", "deterministic" },
  cost = { "flops", "bytes", "unit" },
  launch = { "grid", "block", "smem", "entry" },
}
M.UNITS = { "fp32", "tf32", "bf16", "fp16", "fp8", "fp64" }
M.PRECISIONS = { "f64", "f32", "f16", "bf16" }

return M
