-- kloop.task: loads and checks a task sidecar (kernels/name.cu + kernels/name.lua).
local util = require("kloop.util")
local plan = require("kloop.plan")

local M = {}

-- C parameter types kloop knows, with the element dtype for pointers.
M.ctypes = {
  float = "f32", double = "f64", half = "f16", __half = "f16", __nv_bfloat16 = "bf16",
  int = "i32", ["unsigned"] = "u32", ["unsigned int"] = "u32", int32_t = "i32", uint32_t = "u32",
  ["long long"] = "i64", int64_t = "i64", ["unsigned char"] = "u8", uint8_t = "u8",
  ["signed char"] = "i8", int8_t = "i8", char = "i8", size_t = "i64",
}

-- The error every sidecar mistake raises: file, field, problem, fix.
local TaskError = {}
TaskError.__index = TaskError
TaskError.__tostring = function(e) return e.message end

local function fail(file, field, problem, fix)
  local msg = string.format("%s: %s: %s", file, field, problem)
  if fix then msg = msg .. " (fix: " .. fix .. ")" end
  error(setmetatable({ message = msg, file = file, field = field }, TaskError), 0)
end
M.fail = fail

-- Normalizes a C type: "const float * __restrict__" -> "const float*".
function M.normalize_ctype(t)
  t = t:gsub("__restrict__", ""):gsub("__restrict", ""):gsub("restrict", "")
  t = t:gsub("%s*%*%s*", "*"):gsub("%s+", " "):gsub("^%s+", ""):gsub("%s+$", "")
  return t
end

-- Splits "const float*" into constness, base type and pointer flag.
function M.parse_ctype(t)
  t = M.normalize_ctype(t)
  local is_ptr = t:sub(-1) == "*"
  local base = is_ptr and t:sub(1, -2) or t
  local is_const = false
  if base:match("^const ") then is_const = true base = base:sub(7) end
  if base:match(" const$") then is_const = true base = base:sub(1, -7) end
  return { ctype = t, base = base, pointer = is_ptr, const = is_const, dtype = M.ctypes[base] }
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

-- Parameter list of `entry` in a CUDA source: list of {ctype=, name=}, or nil, why.
function M.kernel_params(source, entry, host)
  local clean = source:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
  local name = entry:gsub("%p", "%%%0")
  local params
  if host then
    -- a C definition: void entry(...) {
    params = clean:match("void%s+" .. name .. "%s*%(([^)]*)%)%s*{")
    if not params then return nil, "no function 'void " .. entry .. "(...)' defined" end
  else
    -- the entry's parameter list, in a declaration that says __global__ (attributes
    -- such as __launch_bounds__(...) may stand between the two)
    local init = 1
    while true do
      local s, e, plist = clean:find("[%s%*]" .. name .. "%s*%(([^)]*)%)", init)
      if not s then break end
      local head = clean:sub(1, s):match("([^;{}]*)$") or ""
      if head:find("__global__", 1, true) then params = plist break end
      init = e + 1
    end
    if not params then return nil, "no __global__ function named '" .. entry .. "'" end
  end
  local out = {}
  if params:match("^%s*void%s*$") or params:match("^%s*$") then return out end
  for p in (params .. ","):gmatch("([^,]*),") do
    p = p:gsub("^%s+", ""):gsub("%s+$", "")
    local ctype, name = p:match("^(.-)([%a_][%w_]*)$")
    if not ctype or ctype == "" then return nil, "cannot read parameter '" .. p .. "'" end
    out[#out + 1] = { ctype = M.normalize_ctype(ctype), name = name }
  end
  return out
end

local function sandbox_env(extra)
  local env = {
    math = math, string = string, table = table, tonumber = tonumber, tostring = tostring,
    ipairs = ipairs, pairs = pairs, type = type, error = error, assert = assert, select = select,
    unpack = unpack, pcall = pcall,
    cdiv = function(a, b) return math.floor((a + b - 1) / b) end,
    min = math.min, max = math.max, floor = math.floor, ceil = math.ceil,
  }
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end
M.sandbox_env = sandbox_env

-- Evaluates a size expression ("M*K", a number or a function of the sizes).
function M.eval_size(expr, sizes, file, field)
  if type(expr) == "number" then return expr end
  if type(expr) == "function" then
    local ok, v = pcall(expr, sizes)
    if not ok or type(v) ~= "number" then
      fail(file, field, "size function failed: " .. tostring(v), "return a number from the size table")
    end
    return v
  end
  if type(expr) ~= "string" then fail(file, field, "size must be a string expression, a number or a function") end
  local fn, err = loadstring("return " .. expr, "=" .. field)
  if not fn then fail(file, field, "size expression '" .. expr .. "' does not parse: " .. err) end
  setfenv(fn, sandbox_env(sizes))
  local ok, v = pcall(fn)
  if not ok or type(v) ~= "number" then
    fail(file, field, "size expression '" .. expr .. "' does not evaluate: " .. tostring(v),
      "use only the size names (" .. table.concat(util.sorted_keys(sizes), ", ") .. ") and + - * / cdiv")
  end
  if v < 0 or v ~= math.floor(v) then fail(file, field, "size '" .. expr .. "' gives " .. v .. ", not a count") end
  return v
end

local function check_type(file, field, v, want, fix)
  if type(v) ~= want then
    fail(file, field, string.format("expected a %s, got %s", want, type(v)), fix)
  end
end

-- Loads the sidecar next to a .cu file (or the .lua itself) and checks every field.
function M.load(target)
  local lua_path, cu_path
  if target:match("%.lua$") then
    lua_path = target
  else
    lua_path = target:gsub("%.[%w]+$", "") .. ".lua"
    cu_path = target
  end
  if not util.file_exists(lua_path) then
    return nil, string.format("%s: no task sidecar (expected %s next to the kernel; see docs/TASKS.md)",
      target, lua_path)
  end
  local chunk, err = loadfile(lua_path)
  if not chunk then return nil, err end
  local env = sandbox_env()
  env.kloop = { task = function(t) return t end }
  setfenv(chunk, env)
  local ok, t = pcall(chunk)
  if not ok then
    if type(t) == "table" and t.message then return nil, t.message end
    return nil, lua_path .. ": " .. tostring(t)
  end
  if type(t) ~= "table" then
    return nil, lua_path .. ": the sidecar must return kloop.task { ... } (it returned " .. type(t) .. ")"
  end
  local ok2, task = pcall(M.check, t, lua_path, cu_path)
  if not ok2 then
    if type(task) == "table" and task.message then return nil, task.message end
    error(task, 0)
  end
  return task
end

-- Checks a raw task table; raises a TaskError naming the field.
function M.check(t, file, cu_path)
  local dir = util.dirname(file)
  local task = { file = file, dir = dir }
  check_type(file, "name", t.name, "string", 'add name = "sgemm"')
  check_type(file, "entry", t.entry, "string", 'add entry = "the __global__ function name"')
  task.name, task.entry = t.name, t.entry
  task.kernel = t.kernel and (dir .. "/" .. t.kernel) or cu_path or file:gsub("%.lua$", ".cu")
  local src = util.read_file(task.kernel)
  if not src then fail(file, "kernel", "cannot read " .. task.kernel, "put the kernel next to the sidecar") end
  task.source = src
  task.backend = task.kernel:match("%.c$") and "host" or "cuda"

  -- sizes
  check_type(file, "sizes", t.sizes, "table", "add sizes = { bench = {...}, check = {{...}, ...} }")
  check_type(file, "sizes.bench", t.sizes.bench, "table", "add the benchmark size, e.g. bench = {N = 1<<24}")
  check_type(file, "sizes.check", t.sizes.check, "table", "add a list of check sizes")
  if #t.sizes.check < 1 then fail(file, "sizes.check", "needs at least one check size") end
  local names = util.sorted_keys(t.sizes.bench)
  local function check_size(s, field)
    check_type(file, field, s, "table")
    for _, k in ipairs(names) do
      if type(s[k]) ~= "number" or s[k] < 0 or s[k] ~= math.floor(s[k]) then
        fail(file, field .. "." .. k, "must be a non-negative integer (every size names the same keys as bench)")
      end
    end
    for k in pairs(s) do
      if t.sizes.bench[k] == nil then fail(file, field .. "." .. k, "is not a key of sizes.bench") end
    end
  end
  check_size(t.sizes.bench, "sizes.bench")
  for i, s in ipairs(t.sizes.check) do check_size(s, "sizes.check[" .. i .. "]") end
  task.sizes = { bench = t.sizes.bench, check = t.sizes.check, hidden = t.sizes.hidden }

  -- arguments, checked against the kernel's parameter list
  check_type(file, "args", t.args, "table", 'list the arguments: args = { {"N", "int"}, {"x", "const float*", size = "N"} }')
  local params, perr = M.kernel_params(src, task.entry, task.backend == "host")
  if not params then
    fail(file, "entry", perr .. " in " .. task.kernel,
      task.backend == "host" and "define it as a non-static void function" or 'declare it extern "C" __global__')
  end
  do
    if #params ~= #t.args then
      fail(file, "args", string.format("lists %d arguments but %s(%s) takes %d", #t.args, task.entry,
        task.kernel, #params), "list the kernel's parameters in order")
    end
  end
  task.args = {}
  local has_output = false
  for i, a in ipairs(t.args) do
    local field = "args[" .. i .. "]"
    check_type(file, field, a, "table")
    check_type(file, field .. "[1] (name)", a[1], "string")
    check_type(file, field .. "[2] (type)", a[2], "string")
    local ct = M.parse_ctype(a[2])
    if not ct.dtype then
      fail(file, field, "unknown type '" .. a[2] .. "'", "use one of float, double, half, __nv_bfloat16, int, unsigned, int64_t, uint8_t (or pointers to them)")
    end
    if params and M.normalize_ctype(params[i].ctype) ~= ct.ctype then
      fail(file, field, string.format("type %s does not match the kernel's parameter %d '%s %s'",
        ct.ctype, i, params[i].ctype, params[i].name), "make the sidecar and the kernel agree")
    end
    local arg = { name = a[1], ctype = ct.ctype, dtype = ct.dtype, pointer = ct.pointer }
    if ct.pointer then
      if a.size == nil then fail(file, field .. ".size", "a buffer needs a size (elements)", 'add size = "N"') end
      arg.size = a.size
      if ct.const then
        arg.role = "input"
        if a.output or a.inout then fail(file, field, "a const pointer cannot be an output", "drop const or the flag") end
      elseif a.output then
        arg.role = "output"
        has_output = true
      elseif a.inout then
        arg.role = "inout"
        has_output = true
      else
        fail(file, field, "non-const buffer without a role", "add output = true (or inout = true), or make it const")
      end
      if arg.role ~= "output" then
        local init = a.init or "uniform(-1,1)"
        local inits = type(init) == "table" and init or { init }
        arg.dists = {}
        for j, s in ipairs(inits) do
          local d = M.parse_dist(s)
          if not d then
            fail(file, field .. ".init", "cannot read distribution '" .. tostring(s) .. "'",
              "use uniform(a,b), normal(mean,sd), int(a,b) or const(v)")
          end
          arg.dists[j] = d
        end
        if #arg.dists == 1 then arg.dists[2] = M.second_dist(arg.dists[1]) end
      end
    else
      if a.value ~= nil then
        arg.value = a.value
      elseif t.sizes.bench[a[1]] == nil then
        fail(file, field, "scalar '" .. a[1] .. "' is not a size name and has no value",
          'name it after a key of sizes, or add value = "expression"')
      end
    end
    task.args[i] = arg
  end
  if not has_output then fail(file, "args", "no output buffer", "mark the result buffer with output = true") end

  -- launch plan of the task's own kernel
  if task.backend == "host" and t.launch == nil then
    -- a host kernel is one call: the plan only names the entry
    t.launch = { grid = { 1 }, block = { 1 } }
  end
  if type(t.launch) ~= "function" and type(t.launch) ~= "table" then
    fail(file, "launch", "missing launch plan", "add launch = function(s) return {grid = {...}, block = {...}} end")
  end
  task.launch = t.launch

  -- reference
  local ref = t.reference
  if ref == nil or ref == "baseline" then
    task.reference = { baseline = true }
  elseif type(ref) == "table" then
    check_type(file, "reference.source", ref.source, "string", 'reference = {source = "gemm_ref.cu", entry = "gemm_ref"}')
    check_type(file, "reference.entry", ref.entry, "string")
    local rpath = dir .. "/" .. ref.source
    local rsrc = util.read_file(rpath)
    if not rsrc then fail(file, "reference.source", "cannot read " .. rpath) end
    local rparams, rerr = M.kernel_params(rsrc, ref.entry, rpath:match("%.c$") ~= nil)
    if not rparams then fail(file, "reference.entry", rerr .. " in " .. rpath) end
    if #rparams ~= #task.args then
      fail(file, "reference", string.format("%s takes %d parameters, the task %d", ref.entry, #rparams, #task.args))
    end
    local out_dtype = ref.precision or "f64"
    for i, p in ipairs(rparams) do
      local want = task.args[i]
      local pt = M.parse_ctype(p.ctype)
      if want.role == "output" then
        if pt.dtype ~= out_dtype then
          fail(file, "reference", string.format("parameter %d '%s' should be %s (precision %s)", i, p.name,
            out_dtype == "f64" and "double*" or out_dtype, out_dtype))
        end
      elseif pt.ctype ~= want.ctype then
        fail(file, "reference", string.format("parameter %d '%s' is %s, the task says %s", i, p.name, pt.ctype, want.ctype))
      end
    end
    task.reference = { source = rsrc, path = rpath, entry = ref.entry, precision = out_dtype,
      launch = ref.launch or t.launch }
  else
    fail(file, "reference", "must be a table or \"baseline\"", 'reference = {source = "x_ref.cu", entry = "x_ref"}')
  end

  -- tolerance: tighten only; defaults documented in docs/TASKS.md
  local tol = t.tolerance or {}
  check_type(file, "tolerance", tol, "table")
  task.tolerance = {
    rel = tol.rel or 1e-5,          -- relative L2 norm of the error
    max_abs = tol.max_abs,          -- absolute bound per element (default: scaled, see verify)
    deterministic = tol.deterministic == nil and "exact" or tol.deterministic,
  }
  if type(task.tolerance.rel) ~= "number" or task.tolerance.rel <= 0 or task.tolerance.rel > 0.1 then
    fail(file, "tolerance.rel", "must be a number in (0, 0.1]")
  end

  -- cost model
  if type(t.cost) ~= "function" then
    fail(file, "cost", "missing cost model", "add cost = function(s) return {flops = ..., bytes = ...} end")
  end
  task.cost = t.cost
  local okc, c = pcall(t.cost, t.sizes.bench)
  if not okc or type(c) ~= "table" or type(c.flops) ~= "number" or type(c.bytes) ~= "number" then
    fail(file, "cost", "cost(sizes.bench) must return {flops = number, bytes = number}: " .. tostring(c))
  end
  task.unit = t.unit or c.unit or "fp32"

  -- tunable parameters (passed as -D defines); only those the kernel uses
  task.params = t.params or {}
  if t.constraint ~= nil and type(t.constraint) ~= "function" then
    fail(file, "constraint", "must be a function(point) returning true for valid parameter points")
  end
  task.constraint = t.constraint
  check_type(file, "params", task.params, "table")
  for k, v in pairs(task.params) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then fail(file, "params", "bad parameter name " .. tostring(k)) end
    if type(v) ~= "table" or #v == 0 then fail(file, "params." .. k, "must list its values, e.g. {16, 32, 64}") end
    if not src:find(k, 1, true) then fail(file, "params." .. k, "the kernel never uses " .. k, "remove it") end
  end
  task.options = t.options or {}
  -- profiler metrics the task wants besides the defaults (docs/PROFILING.md)
  if t.metrics ~= nil then
    check_type(file, "metrics", t.metrics, "table")
    local list, merr = require("kloop.profile").metric_list(t.metrics)
    if not list then
      fail(file, "metrics", merr:gsub("^metrics: ", ""), 'metrics = {"dram__bytes_read.sum"} (names as ncu spells them)')
    end
    task.metrics = t.metrics
  end
  -- isolation limits and deadlines (docs/TASKS.md, "What a kernel can carry" and "Deadlines")
  local function positive(name, v, what, fix, int, min)
    if v == nil then return nil end
    if type(v) ~= "number" or v ~= v or v < (min or 0) or (int and v ~= math.floor(v)) then
      fail(file, name, string.format("must be %s, not %s", what, type(v) == "string" and ("the string \"" .. v .. "\"") or tostring(v)), fix)
    end
    return v
  end
  task.deadline = positive("deadline", t.deadline, "a number of seconds above 0", "deadline = 60", false, 1e-3)
  task.deadline_factor = positive("deadline_factor", t.deadline_factor, "a number >= 1", "deadline_factor = 4", false, 1)
  task.device_heap = positive("device_heap", t.device_heap, "a whole number of bytes", "device_heap = 8 * 2^20", true)
  task.static_data = positive("static_data", t.static_data, "a whole number of bytes", "static_data = 16 * 2^20", true)
  task.flush_cache = t.flush_cache
  if task.flush_cache == nil then task.flush_cache = task.backend == "cuda" end
  -- every size and launch plan must evaluate now, not halfway through a run
  for _, case in ipairs(M.cases(task)) do
    plan.for_task(task, case.size, file)
    M.concrete_args(task, case.size)
  end
  return task
end

-- The verification cases: every check size, then the benchmark size (last, timed).
function M.cases(task)
  local out = {}
  for i, s in ipairs(task.sizes.check) do out[#out + 1] = { label = "check" .. i, size = s } end
  out[#out + 1] = { label = "bench", size = task.sizes.bench, bench = true }
  return out
end

-- Buffer element counts and scalar values of the arguments at a size.
function M.concrete_args(task, size)
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

return M
