-- kloop.eval.task_sizes: a task's sizes and parameter points as sidecar code sees them:
-- the table a sidecar function gets (a point's parameters, then the sizes), the default
-- point, the point a source is compiled at, size expressions, the verification cases
-- and the concrete arguments at a size.
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local fields = require("kloop.eval.task_fields")
local sidecar = require("kloop.eval.sidecar")
local ctypes = require("kloop.eval.ctypes")

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

-- sizes_as_defines (docs/TASKS.md, "Sizes compiled in"): true (every size name) or a
-- list of size names, each passed as -DNAME=value at every size, so a candidate is
-- compiled once per case. Returns the sorted list of names, or nil when the field is
-- absent or false. Refused: another type, a name that is no size, a name that is also
-- a tunable parameter, and a kernel (or reference) that #defines or #undefs a name
-- outside an `#ifndef NAME` guard (its own value would silently win over the size's).
function M.check_sizes_as_defines(file, v, bench, params, sources)
  local field = "sizes_as_defines"
  if v == nil or v == false then return nil end
  local names = util.sorted_keys(bench)
  local list
  if v == true then
    list = names
  elseif type(v) == "table" then
    fields.check_list(file, v, field, 'sizes_as_defines = {"WIDTH", "HEIGHT"} (or true: every size)')
    if #v == 0 then fail(file, field, "the list is empty", 'name the sizes: sizes_as_defines = {"WIDTH"}, or remove it') end
    local seen = {}
    list = {}
    for i, name in ipairs(v) do
      local f = field .. "[" .. i .. "]"
      if type(name) ~= "string" then fail(file, f, "expected a size name, got " .. fields.describe(name)) end
      if bench[name] == nil then
        local near = fields.closest(name, names)
        fail(file, f, string.format("'%s' is not a size of this task (sizes.bench has %s)%s", name,
          table.concat(names, ", "), near and ("; did you mean '" .. near .. "'?") or ""),
          near and ("rename it " .. near) or "name a key of sizes.bench")
      end
      if seen[name] then fail(file, f, "'" .. name .. "' is listed twice", "keep one") end
      seen[name] = true
      list[#list + 1] = name
    end
    table.sort(list)
  else
    fail(file, field, "expected true or a list of size names, got " .. fields.describe(v),
      'sizes_as_defines = true, or sizes_as_defines = {"WIDTH", "HEIGHT"}')
  end
  for _, name in ipairs(list) do
    if type(params) == "table" and params[name] ~= nil then
      fail(file, field, string.format("'%s' is a size and a tunable parameter: both would be passed as -D%s", name, name),
        "rename the parameter (params." .. name .. "), or leave the size out of sizes_as_defines")
    end
  end
  for _, s in ipairs(sources or {}) do
    local line, name, what = M.unguarded_define(s.text, list)
    if line then
      fail(file, field, string.format("%s:%d %ss %s outside an #ifndef %s guard: its own value would win over "
        .. "the size's -D%s=..., and every size would compute %s's", s.path, line, what, name, name, name, s.path),
        string.format("guard it: #ifndef %s / #define %s ... / #endif", name, name))
    end
  end
  return list
end

-- The first `#define NAME` or `#undef NAME` (NAME in names) of src that no enclosing
-- `#ifndef NAME` (or `#if !defined(NAME)`, or the #else of `#ifdef NAME`) guards: line,
-- name, "define" or "undef"; nil when every one is guarded.
function M.unguarded_define(src, names)
  local want = {}
  for _, n in ipairs(names) do want[n] = true end
  local stack = {} -- per open conditional: {neg = name guarded in the if branch, pos = in the else branch, other = in else}
  local n = 0
  local text = (src or ""):gsub("\\\r?\n", " ")
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local l = line:gsub("/%*.-%*/", " "):gsub("//.*$", "")
    local dir, rest = l:match("^%s*#%s*([%a_]+)(.*)$")
    if dir == "ifndef" then
      stack[#stack + 1] = { guard = rest:match("^%s*([%a_][%w_]*)"), branch = "if" }
    elseif dir == "ifdef" then
      stack[#stack + 1] = { guard_else = rest:match("^%s*([%a_][%w_]*)"), branch = "if" }
    elseif dir == "if" then
      stack[#stack + 1] = { guard = rest:match("^%s*!%s*defined%s*%(?%s*([%a_][%w_]*)%s*%)?%s*$"), branch = "if" }
    elseif (dir == "else" or dir == "elif") and #stack > 0 then
      stack[#stack].branch = dir
    elseif dir == "endif" then
      stack[#stack] = nil
    elseif dir == "define" or dir == "undef" then
      local name = rest:match("^%s*([%a_][%w_]*)")
      if name and want[name] then
        local guarded = false
        for _, f in ipairs(stack) do
          if (f.branch == "if" and f.guard == name) or (f.branch == "else" and f.guard_else == name) then guarded = true end
        end
        if not guarded then return n, name, dir end
      end
    end
  end
  return nil
end

-- Why a candidate's source cannot be compiled with the task's sizes in (it #defines or
-- #undefs one of them unguarded), or nil. The task's own kernel is refused at load.
function M.unguarded_reason(task, src)
  if not task.sizes_as_defines then return nil end
  local line, name, what = M.unguarded_define(src, task.sizes_as_defines)
  if not line then return nil end
  return string.format("line %d %ss %s outside an #ifndef %s guard, but %s is a size the task compiles in (-D%s=value "
    .. "at each size): the kernel's own value would win at every size (fix: #ifndef %s / #define %s ... / #endif, or "
    .. "drop it)", line, what, name, name, name, name, name, name)
end

-- The defines a source is compiled with at one size: `defines` (a candidate's point)
-- plus -DNAME=value for each name of task.sizes_as_defines (the size wins: the task
-- refuses a parameter of the same name). Without sizes compiled in: `defines` itself.
function M.size_defines(task, size, defines)
  if not task.sizes_as_defines then return defines end
  local out = {}
  for k, v in pairs(defines or {}) do out[k] = v end
  for _, name in ipairs(task.sizes_as_defines) do out[name] = size[name] end
  return out
end

-- Evaluates a size expression ("M*K", a number or a function of the sizes).
local chunks, nchunks, base_env = {}, 0, nil
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
  -- (compiled once per expression and field: a search evaluates the task's few size
  -- expressions at every case of every candidate; each call gets a fresh environment)
  local ckey = field .. "\0" .. expr
  local fn, err = chunks[ckey], nil
  if not fn then
    fn, err = loadstring("return " .. expr, "=" .. field)
    if fn then
      if nchunks >= 256 then chunks, nchunks = {}, 0 end
      chunks[ckey], nchunks = fn, nchunks + 1
    end
  end
  if not fn then fail(file, field, "size expression '" .. expr .. "' does not parse: " .. err) end
  -- (the sizes over one shared sandbox: building the whole sandbox at every call cost
  -- more than the expression)
  base_env = base_env or sidecar.sandbox_env()
  local env = setmetatable({}, { __index = base_env })
  for k, v in pairs(sizes) do env[k] = v end
  setfenv(fn, env)
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
      -- count: scalar elements (a float4 buffer of n is 4n floats, docs/TASKS.md); elems: as the task counts them
      local n = M.eval_size(a.size, size, task.file, field .. ".size")
      local e = a.typed and M.element(task, i, size) or a
      out[i] = { count = n * (e.lanes or 1), elems = n, lanes = e.lanes or 1, dtype = e.dtype, elem = e.elem }
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

-- The element type of args[i] at a point (sizes and parameters in one table): a record
-- with dtype, lanes and elem (the type's name). Raises a TaskError naming the field.
function M.element(task, i, point)
  local a = task.args[i]
  local ok, e, name = pcall(ctypes.element_at, a.ctype, a.type_fn, point)
  local field = "args[" .. i .. "]" .. (a.type_fn ~= nil and ".type" or "")
  if not ok then fail(task.file, field, tostring(type(e) == "table" and e.message or e)) end
  if not e.dtype then
    fail(task.file, field, string.format("unknown type '%s' at this point", tostring(name)), "use one of " .. ctypes.KNOWN)
  end
  if e.dtype ~= a.dtype then
    fail(task.file, field, string.format("element %s (%s) at this point, %s (%s) at the default point: the scalar type may not change",
      e.base, e.dtype, a.elem, a.dtype), "keep one scalar type (float and float4 are both float)")
  end
  return { dtype = e.dtype, lanes = e.lanes, elem = e.base }
end

-- Refuses a buffer other than scratch whose element count changes with a parameter
-- (each parameter's values tried in turn at the bench size, the others at p0): the
-- worker sizes inputs, outputs and references once, at the reference's point, so such a
-- buffer could not be compared (docs/TASKS.md, "Sizes that depend on the point").
local function unit(arg) return arg.lanes > 1 and arg.elem or "elements" end

function M.check_point_counts(task, p0)
  local bench = task.sizes.bench
  local base = M.concrete_args(task, bench, p0)
  local base_syms = M.concrete_symbols(task, bench, p0)
  for _, k in ipairs(util.sorted_keys(task.params or {})) do
    for _, v in ipairs(task.params[k]) do
      local p = {}
      for pk, pv in pairs(p0) do p[pk] = pv end
      p[k] = v
      -- (a point the constraint refuses is never run: float4 with VEC = 1, say)
      local valid = not task.constraint or select(2, pcall(task.constraint, p)) == true
      local ok, args, oks, syms = false, nil, false, nil
      if valid then
        ok, args = pcall(M.concrete_args, task, bench, p)
        oks, syms = pcall(M.concrete_symbols, task, bench, p)
      end
      for s, sy in ipairs(oks and task.symbols or {}) do
        if syms[s].count ~= base_syms[s].count then
          fail(task.file, string.format("symbols[%d].count", s), string.format(
            "%s has %d elements at %s = %s, %d at the default point: a symbol the reference reads cannot change size with a parameter",
            sy.name, syms[s].count, k, tostring(v), base_syms[s].count), "size it by the sizes alone")
        end
      end
      for i, a in ipairs(task.args) do
        if ok and a.pointer and a.role ~= "scratch" and args[i].count ~= base[i].count then
          fail(task.file, string.format("args[%d].size", i), string.format(
            "%s has %d %s at %s = %s, %d %s at the default point: only a scratch buffer may change size with a parameter",
            a.name, args[i].elems, unit(args[i]), k, tostring(v), base[i].elems, unit(base[i])),
            a.role == "output" and "judge it by a check function and mark it scratch = true, or size it by the sizes alone"
            or "size it by the sizes alone (a vector type's lanes may change: N / VEC float4 is N floats)")
        end
      end
    end
  end
end

-- Distribution strings: uniform(a,b), normal(m,s), const(v), int(a,b).
function M.parse_dist(s)
  if type(s) ~= "string" then return nil end
  local kind, a, b = s:match("^%s*(%a+)%s*%(%s*([^,%)]+)%s*,?%s*([^%)]*)%)%s*$")
  a, b = tonumber(a), tonumber(b)
  if kind == "uniform" and a and b and b > a then return { kind = "uniform", a = a, b = b } end
  if kind == "normal" and a and b and b > 0 then return { kind = "normal", a = a, b = b } end
  if kind == "const" and a then return { kind = "const", a = a, b = 0 } end
  if kind == "int" and a and b and b >= a then return { kind = "int", a = a, b = b } end
  return nil
end

-- A second distribution for the same argument, so no kernel passes on one input shape
-- only: same centre, other shape.
function M.second_dist(d)
  if d.kind == "uniform" then return { kind = "normal", a = (d.a + d.b) / 2, b = (d.b - d.a) / 4 } end
  if d.kind == "normal" then return { kind = "uniform", a = d.a - 2 * d.b, b = d.a + 2 * d.b } end
  if d.kind == "int" then return { kind = "int", a = d.a, b = math.max(d.a, math.floor((d.a + d.b) / 2)) } end
  return d
end

-- A buffer's or symbol's `init` (nil: uniform(-1,1); a string or a list of them) as the
-- list of distributions it is filled from, at least two (docs/TASKS.md).
function M.parse_inits(file, field, init)
  init = init or "uniform(-1,1)"
  fields.want(file, field, init, { "string", "table" }, 'init = "uniform(-1,1)" or a list of them')
  local inits = type(init) == "table" and init or { init }
  if type(init) == "table" then
    fields.check_list(file, init, field, 'init = {"uniform(-1,1)", "normal(0,1)"}')
    if #init == 0 then fail(file, field, "the list is empty", 'init = {"uniform(-1,1)"}') end
  end
  local dists = {}
  for j, s in ipairs(inits) do
    local d = M.parse_dist(s)
    if not d then
      fail(file, field, "cannot read distribution '" .. tostring(s) .. "'", "use uniform(a,b), normal(mean,sd), int(a,b) or const(v)")
    end
    dists[j] = d
  end
  if #dists == 1 then dists[2] = M.second_dist(dists[1]) end
  return dists
end

-- symbols (docs/TASKS.md, "Symbols filled from the host"): module-scope arrays the
-- kernel declares (`__constant__ float filter[FW * FH];`, a `__device__` array, a C
-- global on the host) that kloop fills per input set for the candidate and the
-- reference alike. Returns the checked list ({name, ctype, dtype, lanes, count, dists}).
function M.check_symbols(file, list, src, ref_src, backend)
  if list == nil then return {} end
  fields.check_type(file, "symbols", list, "table", 'symbols = { {"filter", "float", count = "FW*FH"} }')
  fields.check_list(file, list, "symbols", 'symbols = { {"filter", "float", count = "FW*FH"} }')
  local out, seen = {}, {}
  for k, sy in ipairs(list) do
    local field = "symbols[" .. k .. "]"
    fields.check_type(file, field, sy, "table", '{"filter", "float", count = "FW*FH", init = "uniform(-1,1)"}')
    fields.known_fields(file, field, sy, fields.FIELDS.symbol, 2)
    fields.check_type(file, field .. "[1] (name)", sy[1], "string", '{"filter", "float", count = "FW*FH"}')
    fields.check_type(file, field .. "[2] (type)", sy[2], "string", '{"filter", "float", count = "FW*FH"}')
    local name = sy[1]
    if not name:match("^[%a_][%w_]*$") then fail(file, field, "a symbol's name is an identifier, not " .. fields.describe(name)) end
    if seen[name] then fail(file, field, "symbol '" .. name .. "' is declared twice", "keep one entry") end
    seen[name] = true
    local ct = ctypes.parse_ctype(sy[2])
    if not ct.dtype or ct.pointer then
      fail(file, field .. "[2] (type)", "unknown element type '" .. sy[2] .. "'",
        "use one of " .. ctypes.KNOWN:gsub(" %(or pointers to them%)", ""))
    end
    if sy.count == nil then fail(file, field .. ".count", "a symbol needs a count (elements)", 'add count = "FW*FH"') end
    fields.want(file, field .. ".count", sy.count, { "string", "number", "function" },
      'count = "FW*FH" (an expression, a number or a function)')
    -- declared at module scope under that name: `__constant__ float filter[...]` / `float filter[...]`
    local pat = "[%s%*]" .. name .. "%s*[%[;=]"
    local function declares(text)
      local c = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
      local s = c:find(pat)
      if not s then return false end
      return backend == "host" or (c:sub(1, s):match("([^;{}]*)$") or ""):find("__constant__") ~= nil
        or (c:sub(1, s):match("([^;{}]*)$") or ""):find("__device__") ~= nil
    end
    if not declares(src) then
      fail(file, field, string.format("the kernel declares no %s '%s'",
        backend == "host" and "global" or "__constant__ or __device__ symbol", name),
        backend == "host" and ("declare it at file scope: " .. ct.base .. " " .. name .. "[...];")
        or ("declare it at file scope: __constant__ " .. ct.base .. " " .. name .. "[...];"))
    end
    if ref_src and not declares(ref_src) then
      fail(file, field, "the reference declares no symbol '" .. name .. "' (it must compute with the same values)",
        "declare it in the reference's source too")
    end
    out[k] = { name = name, ctype = ct.ctype, dtype = ct.dtype, lanes = ct.lanes, elem = ct.base,
      count = sidecar.guard(file, field .. ".count", sy.count), dists = M.parse_inits(file, field .. ".init", sy.init) }
  end
  return out
end

-- Each symbol's scalar element count at a size and point (like concrete_args' count).
function M.concrete_symbols(task, size, params)
  size = M.with_params(size, params)
  local out = {}
  for k, sy in ipairs(task.symbols or {}) do
    out[k] = { count = M.eval_size(sy.count, size, task.file, "symbols[" .. k .. "].count") * sy.lanes }
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
