-- kloop.eval.task_sizes: a task's sizes and parameter points as sidecar code sees them:
-- the table a sidecar function gets (a point's parameters, then the sizes), the default
-- point, the point a source is compiled at, size expressions, the verification cases
-- and the concrete arguments at a size.
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local fields = require("kloop.eval.task_fields")
local sidecar = require("kloop.eval.sidecar")

local M = {}
local fail = fields.fail

-- The table a sidecar function sees: the parameters of a point, then the sizes (a size
-- wins over a parameter of the same name). Without params it is the size table itself.
function M.with_params(size, params)
  if params == nil or next(params) == nil then return size end
  local out = {}
  for k, v in pairs(params) do
    if type(k) == "string" and k:sub(1, 6) ~= "kloop_" then out[k] = tonumber(v) or v end
  end
  for k, v in pairs(size) do out[k] = v end
  return out
end

-- The default point: the first value of each parameter (what load-time checks use).
function M.default_point(params)
  local p = {}
  if type(params) ~= "table" then return p end
  for k, v in pairs(params) do if type(k) == "string" and type(v) == "table" and v[1] ~= nil then p[k] = v[1] end end
  return p
end

-- The point a source is compiled at: `defines`, plus the first value of each declared
-- parameter that neither `defines` nor a `#define` in the source sets (a Kernel Tuner
-- kernel has no defaults of its own; a kloop kernel's #ifndef defaults stay its own).
function M.fill_defaults(task, src, defines)
  local point = {}
  for k, v in pairs(M.default_point(task.params)) do
    if (defines == nil or defines[k] == nil) and not (src or ""):find("#%s*define%s+" .. k .. "[^%w_]") then point[k] = v end
  end
  for k, v in pairs(defines or {}) do point[k] = v end
  return point
end

-- Evaluates a size expression ("M*K", a number or a function of the sizes).
function M.eval_size(expr, sizes, file, field)
  if type(expr) == "number" then return expr end
  if type(expr) == "function" then
    local ok, v = pcall(expr, sizes)
    if not ok and sys.is_interrupt(v) then error(v, 0) end -- Ctrl-C, not a bad size
    if not ok or type(v) ~= "number" then
      fail(file, field, "size function failed: " .. tostring(v), "return a number from the size table")
    end
    return v
  end
  if type(expr) ~= "string" then fail(file, field, "size must be a string expression, a number or a function") end
  local fn, err = loadstring("return " .. expr, "=" .. field)
  if not fn then fail(file, field, "size expression '" .. expr .. "' does not parse: " .. err) end
  setfenv(fn, sidecar.sandbox_env(sizes))
  local ok, v = pcall(fn)
  if not ok or type(v) ~= "number" then
    fail(file, field, "size expression '" .. expr .. "' does not evaluate: " .. tostring(v),
      "use only the size names (" .. table.concat(util.sorted_keys(sizes), ", ") .. ") and + - * / cdiv")
  end
  if v < 0 or v ~= math.floor(v) then fail(file, field, "size '" .. expr .. "' gives " .. v .. ", not a count") end
  return v
end

-- The verification cases: every check size, then the benchmark size (last, timed).
function M.cases(task)
  local out = {}
  for i, s in ipairs(task.sizes.check) do out[#out + 1] = { label = "check" .. i, size = s } end
  out[#out + 1] = { label = "bench", size = task.sizes.bench, bench = true }
  return out
end

-- Buffer element counts and scalar values of the arguments at a size (and a point of
-- the parameter space: sizes and value expressions see both, docs/TASKS.md).
function M.concrete_args(task, size, params)
  size = M.with_params(size, params)
  local out = {}
  for i, a in ipairs(task.args) do
    local field = "args[" .. i .. "]"
    if a.pointer then
      out[i] = { count = M.eval_size(a.size, size, task.file, field .. ".size") }
    else
      local v
      if type(a.value) == "number" then v = a.value
      elseif a.value ~= nil then v = M.eval_size(a.value, size, task.file, field .. ".value")
      else v = size[a.name] end
      out[i] = { value = v }
    end
  end
  return out
end

-- sizes.promote (docs/PROMOTION.md): a function returning extra size tables, or a table
-- of per-dimension bounds {min, max, multiple_of, values} keyed by size name, with
-- count, max_bytes and extra (a list of sizes or such a function). Raises a TaskError.
function M.check_promote(file, v, bench)
  local field = "sizes.promote"
  if type(v) == "function" then return end
  if type(v) ~= "table" then
    fail(file, field, "expected a table or a function, got " .. fields.describe(v),
      "promote = { N = { min = 1, max = 8192, multiple_of = 32 } }")
  end
  local allowed = {}
  for _, k in ipairs(fields.FIELDS.promote) do allowed[#allowed + 1] = k end
  for k in pairs(bench) do allowed[#allowed + 1] = k end
  table.sort(allowed)
  fields.known_fields(file, field, v, allowed)
  for _, k in ipairs({ "count", "max_bytes" }) do
    if v[k] ~= nil and (type(v[k]) ~= "number" or v[k] < 1 or v[k] ~= math.floor(v[k])) then
      fail(file, field .. "." .. k, "must be a whole number >= 1, not " .. fields.describe(v[k]))
    end
  end
  if v.extra ~= nil and type(v.extra) ~= "function" then
    fields.check_type(file, field .. ".extra", v.extra, "table", "extra = { {N = 4097} } or a function returning such a list")
    fields.check_list(file, v.extra, field .. ".extra", "extra = { {N = 4097} }")
    for i, s in ipairs(v.extra) do
      fields.check_type(file, field .. ".extra[" .. i .. "]", s, "table")
      for k, x in pairs(s) do
        if bench[k] == nil or type(x) ~= "number" or x < 0 or x ~= math.floor(x) then
          fail(file, field .. ".extra[" .. i .. "]." .. tostring(k), "must name a size of bench with a whole number >= 0")
        end
      end
    end
  end
  for k in pairs(bench) do
    local b = v[k]
    if b ~= nil then
      local f = field .. "." .. k
      fields.check_type(file, f, b, "table", k .. " = { min = 1, max = 8192, multiple_of = 32 }")
      fields.known_fields(file, f, b, fields.FIELDS.promote_dim)
      for _, bk in ipairs({ "min", "max", "multiple_of" }) do
        local x = b[bk]
        if x ~= nil and (type(x) ~= "number" or x < (bk == "min" and 0 or 1) or x ~= math.floor(x)) then
          fail(file, f .. "." .. bk, "must be a whole number, not " .. fields.describe(x))
        end
      end
      if b.min and b.max and b.min > b.max then fail(file, f, "min is above max") end
      if b.values ~= nil then
        fields.check_type(file, f .. ".values", b.values, "table", "values = { 4097 }")
        fields.check_list(file, b.values, f .. ".values", "values = { 4097 }")
        for i, x in ipairs(b.values) do
          if type(x) ~= "number" or x < 0 or x ~= math.floor(x) then
            fail(file, f .. ".values[" .. i .. "]", "must be a whole number >= 0, not " .. fields.describe(x))
          end
        end
      end
    end
  end
end

-- sizes.promote with its functions guarded (the sidecar's deadline, errors named).
function M.guard_promote(file, v)
  if type(v) == "function" then return sidecar.guard(file, "sizes.promote", v) end
  if type(v.extra) ~= "function" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = x end
  out.extra = sidecar.guard(file, "sizes.promote.extra", v.extra)
  return out
end

return M
