-- kloop.eval.task: loads and checks a task sidecar (kernels/name.cu + kernels/name.lua).
local util = require("kloop.util")
local plan = require("kloop.eval.plan")

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

---------------------------------------------------------------------------
-- Strictness: every field a sidecar may set, "did you mean" for the others, and a
-- readable name for a value of the wrong type.

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
local function describe(v)
  local ty = type(v)
  if ty == "string" then return string.format("the string %q", #v > 40 and (v:sub(1, 40) .. "...") or v) end
  if ty == "number" or ty == "boolean" then return string.format("the %s %s", ty, tostring(v)) end
  if ty == "nil" then return "nothing" end
  return "a " .. ty
end
M.describe = describe

local function sorted_any(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out, function(a, b)
    if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
    return type(a) < type(b)
  end)
  return out
end

-- Refuses every key of t that is not in `fields` (a list of names; numbers 1..`list`
-- are allowed positional entries). `where` prefixes the field in the message.
local function known_fields(file, where, t, fields, list)
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
M.known_fields = known_fields

-- Refuses a value whose type is not one of `types` ("number", {"string", "function"}).
local function want(file, field, v, types, fix)
  if type(types) == "string" then types = { types } end
  for _, ty in ipairs(types) do if type(v) == ty then return v end end
  fail(file, field, string.format("expected %s, got %s", table.concat(types, " or "), describe(v)), fix)
end

-- Refuses a string that is not one of `values`, with the closest as the fix.
local function one_of(file, field, v, values, example)
  want(file, field, v, "string", example)
  for _, x in ipairs(values) do if v == x then return v end end
  local near = M.closest(v, values)
  fail(file, field, string.format("'%s' is not one of %s%s", v, table.concat(values, ", "),
    near and string.format("; did you mean '%s'?", near) or ""), near and (field:match("[^.]+$") .. " = \"" .. near .. "\"") or example)
end

M.FIELDS = {
  task = { "name", "entry", "kernel", "args", "sizes", "launch", "reference", "tolerance", "cost", "unit",
    "params", "constraint", "options", "metrics", "deadline", "deadline_factor", "device_heap", "static_data",
    "flush_cache" },
  sizes = { "bench", "check", "hidden" },
  arg = { "size", "init", "input", "output", "inout", "value" },
  reference = { "source", "entry", "precision", "launch" },
  tolerance = { "rel", "max_abs", "deterministic" },
  cost = { "flops", "bytes", "unit" },
  launch = { "grid", "block", "smem", "entry" },
}
M.UNITS = { "fp32", "tf32", "bf16", "fp16", "fp8", "fp64" }
M.PRECISIONS = { "f64", "f32", "f16", "bf16" }

---------------------------------------------------------------------------
-- Sidecar code runs under a deadline and stops at Ctrl-C: a count hook looks at the
-- clock and the pending-SIGINT counter, and the sidecar's functions run interpreted
-- (compiled traces never call hooks). A C function that never returns (a pattern
-- that backtracks forever) is out of its reach.

M.call_deadline = 5 -- seconds one call of sidecar code may run

local guard_depth, guard_t0, guard_limit, guard_what, guard_why = 0, 0, 0, nil, nil
local core_C

local guard_at -- where the guarded code was when the hook last looked

local function guard_hook()
  local info = debug.getinfo(2, "Sl")
  guard_at = info and info.currentline and info.currentline > 0
    and string.format(" at %s:%d", info.short_src, info.currentline) or guard_at
  local why
  if core_C.kl_sigint_pending() > 0 then why = "interrupted"
  elseif core_C.kl_now() - guard_t0 > guard_limit then why = "deadline" end
  if why then
    guard_why = why
    local at = guard_at or ""
    debug.sethook()
    if why == "interrupted" then error(string.format("interrupted (Ctrl-C) in %s%s", guard_what, at), 0) end
    error(string.format("%s ran for more than %g s without returning%s (an endless loop?)", guard_what, guard_limit, at), 0)
  end
end

-- Calls fn(...) under the deadline; returns pcall's results. `what` names the code
-- ("the launch function of kernels/x.lua"). Nested calls share the outer deadline.
function M.guarded_pcall(what, fn, ...)
  if guard_depth > 0 then return pcall(fn, ...) end
  core_C = core_C or require("kloop.core.ffi").C
  if type(fn) == "function" then pcall(jit.off, fn, true) end
  local hook, mask, count = debug.gethook()
  guard_depth, guard_t0, guard_limit, guard_what, guard_why, guard_at = 1, core_C.kl_now(), M.call_deadline, what, nil, nil
  debug.sethook(guard_hook, "", 1000)
  local res = { pcall(fn, ...) }
  debug.sethook()
  guard_depth = 0
  if type(hook) == "function" then debug.sethook(hook, mask, count) end
  if not res[1] and guard_why == nil and core_C.kl_sigint_pending() > 0 then
    -- the binding layer's own Ctrl-C hook got there first ("file:line: interrupted")
    res[2] = string.format("interrupted (Ctrl-C) in %s%s", what, guard_at or "")
  end
  return unpack(res, 1, table.maxn(res))
end

-- A function of the sidecar wrapped so every call runs guarded; errors are re-raised
-- with what was running. check(result) may refuse a result (returns nil, msg).
local function guard(file, name, fn, check)
  if type(fn) ~= "function" then return fn end
  pcall(jit.off, fn, true)
  local what = string.format("the %s function of %s", name, file)
  return function(...)
    local res = { M.guarded_pcall(what, fn, ...) }
    if not res[1] then
      local e = res[2]
      if type(e) == "table" and e.message then e = e.message end
      error(tostring(e), 0)
    end
    if check then
      local ok, msg = check(res[2])
      if not ok then error(what .. " " .. msg, 0) end
    end
    return unpack(res, 2, table.maxn(res))
  end
end
M.guard = guard

-- A launch function's result: one plan or a list of them, with known fields only.
local function launch_result_ok(r)
  if type(r) ~= "table" then return true end -- plan.normalize says what is wrong
  local list = r.grid == nil and r.block == nil and #r > 0 and r or { r }
  for i, l in ipairs(list) do
    if type(l) == "table" then
      for k in pairs(l) do
        if type(k) ~= "string" or not ({ grid = 1, block = 1, smem = 1, entry = 1 })[k] then
          local near = type(k) == "string" and M.closest(k, M.FIELDS.launch)
          return nil, string.format("the plan%s has an unknown field '%s'%s (fields: grid, block, smem, entry)",
            #list > 1 and (" of kernel " .. i) or "", tostring(k), near and ("; did you mean '" .. near .. "'?") or "")
        end
      end
    end
  end
  return true
end
M.launch_result_ok = launch_result_ok

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
  -- a C++ entry ("gemm<BM, 8>", "ns::gemm") is declared under its plain name
  if not host then entry = entry:gsub("%b<>", ""):match("([%a_][%w_]*)%s*$") or entry end
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
  -- interpreted (with every function it defines), so the deadline hook sees it run
  jit.off(chunk, true)
  local ok, t = M.guarded_pcall("the sidecar's top level", chunk)
  if not ok then
    if type(t) == "table" and t.message then return nil, t.message end
    t = tostring(t)
    if t:find(lua_path, 1, true) == 1 then return nil, t end
    return nil, lua_path .. ": " .. t
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
  -- a misspelt field is refused before anything else, so it is never read as missing
  known_fields(file, "", t, M.FIELDS.task)
  check_type(file, "name", t.name, "string", 'add name = "sgemm"')
  check_type(file, "entry", t.entry, "string", 'add entry = "the __global__ function name"')
  task.name, task.entry = t.name, t.entry
  if t.kernel ~= nil then want(file, "kernel", t.kernel, "string", 'kernel = "name.cu" (relative to the sidecar)') end
  task.kernel = t.kernel and (dir .. "/" .. t.kernel) or cu_path or file:gsub("%.lua$", ".cu")
  local src = util.read_file(task.kernel)
  if not src then fail(file, "kernel", "cannot read " .. task.kernel, "put the kernel next to the sidecar") end
  task.source = src
  task.backend = task.kernel:match("%.c$") and "host" or "cuda"

  -- sizes
  check_type(file, "sizes", t.sizes, "table", "add sizes = { bench = {...}, check = {{...}, ...} }")
  known_fields(file, "sizes", t.sizes, M.FIELDS.sizes)
  check_type(file, "sizes.bench", t.sizes.bench, "table", "add the benchmark size, e.g. bench = {N = 1<<24}")
  check_type(file, "sizes.check", t.sizes.check, "table", "add a list of check sizes")
  if #t.sizes.check < 1 then fail(file, "sizes.check", "needs at least one check size", "check = { {N = 1000}, {N = 1} }") end
  local function check_list(v, field, fix)
    for _, k in ipairs(sorted_any(v)) do
      if type(k) ~= "number" or k < 1 or k > #v or k ~= math.floor(k) then
        fail(file, field, string.format("must be a list, but has the entry [%s] = %s", type(k) == "string"
          and string.format("%q", k) or tostring(k), describe(v[k])), fix)
      end
    end
  end
  check_list(t.sizes.check, "sizes.check", "list the sizes: check = { {N = 1000}, {N = 1} }")
  local names = util.sorted_keys(t.sizes.bench)
  local function check_size(s, field)
    check_type(file, field, s, "table")
    for _, k in ipairs(sorted_any(s)) do
      if t.sizes.bench[k] == nil then
        local near = type(k) == "string" and M.closest(k, names)
        fail(file, field .. "." .. tostring(k), "is not a key of sizes.bench" .. (near and ("; did you mean '" .. near .. "'?") or ""),
          near and ("rename it " .. near) or ("use the keys of bench: " .. table.concat(names, ", ")))
      end
    end
    for _, k in ipairs(names) do
      if type(s[k]) ~= "number" or s[k] < 0 or s[k] ~= math.floor(s[k]) then
        fail(file, field .. "." .. k, "must be a non-negative integer (every size names the same keys as bench), not "
          .. describe(s[k]))
      end
    end
  end
  for _, k in ipairs(sorted_any(t.sizes.bench)) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      fail(file, "sizes.bench", "size names are identifiers, not " .. describe(k), "bench = {N = 1048576}")
    end
  end
  check_size(t.sizes.bench, "sizes.bench")
  for i, s in ipairs(t.sizes.check) do check_size(s, "sizes.check[" .. i .. "]") end
  if t.sizes.hidden ~= nil then
    check_type(file, "sizes.hidden", t.sizes.hidden, "table", "a list of sizes, like check")
    check_list(t.sizes.hidden, "sizes.hidden", "a list of sizes, like check")
    for i, s in ipairs(t.sizes.hidden) do check_size(s, "sizes.hidden[" .. i .. "]") end
  end
  task.sizes = { bench = t.sizes.bench, check = t.sizes.check, hidden = t.sizes.hidden }

  -- arguments, checked against the kernel's parameter list
  check_type(file, "args", t.args, "table", 'list the arguments: args = { {"N", "int"}, {"x", "const float*", size = "N"} }')
  check_list(t.args, "args", 'one {name, type, ...} per parameter, in order: args = { {"N", "int"}, ... }')
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
    known_fields(file, field, a, M.FIELDS.arg, 2)
    check_type(file, field .. "[1] (name)", a[1], "string")
    check_type(file, field .. "[2] (type)", a[2], "string")
    for _, flag in ipairs({ "input", "output", "inout" }) do
      if a[flag] ~= nil then want(file, field .. "." .. flag, a[flag], "boolean", flag .. " = true") end
    end
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
      want(file, field .. ".size", a.size, { "string", "number", "function" }, 'size = "N" (an expression, a number or a function)')
      if a.value ~= nil then
        fail(file, field .. ".value", "a buffer has no value (value is for scalars)", "remove it; init says how a buffer is filled")
      end
      arg.size = guard(file, field .. ".size", a.size)
      local flags = (a.input and 1 or 0) + (a.output and 1 or 0) + (a.inout and 1 or 0)
      if flags > 1 then
        fail(file, field, "give a buffer one role: input, output or inout", "keep one of input = true, output = true, inout = true")
      end
      if ct.const or a.input then
        -- declared: a plain `float *` the kernel only reads is checked unchanged like a const one
        arg.role = "input"
        if a.output or a.inout then fail(file, field, "a const pointer cannot be an output", "drop const or the flag") end
      elseif a.output then
        arg.role = "output"
        has_output = true
      elseif a.inout then
        arg.role = "inout"
        has_output = true
      else
        fail(file, field, "non-const buffer without a role", "add output = true (or inout = true), input = true, or make it const")
      end
      if arg.role == "output" and a.init ~= nil then
        fail(file, field .. ".init", "an output buffer is not filled (kloop poisons it before every launch)",
          "remove init, or make it inout = true")
      end
      if arg.role ~= "output" then
        local init = a.init or "uniform(-1,1)"
        want(file, field .. ".init", init, { "string", "table" }, 'init = "uniform(-1,1)" or a list of them')
        local inits = type(init) == "table" and init or { init }
        if type(init) == "table" then
          check_list(init, field .. ".init", 'init = {"uniform(-1,1)", "normal(0,1)"}')
          if #init == 0 then fail(file, field .. ".init", "the list is empty", 'init = {"uniform(-1,1)"}') end
        end
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
      for _, k in ipairs({ "size", "init", "input", "output", "inout" }) do
        if a[k] ~= nil then
          fail(file, field .. "." .. k, string.format("scalar '%s' is not a buffer, so it takes no %s", a[1], k),
            'remove it (a scalar is the size of the same name, or value = "expression")')
        end
      end
      if a.value ~= nil then
        want(file, field .. ".value", a.value, { "string", "number", "function" }, 'value = "N / 2" (an expression, a number or a function)')
        arg.value = guard(file, field .. ".value", a.value)
      elseif t.sizes.bench[a[1]] == nil and not (type(t.params) == "table" and t.params[a[1]] ~= nil) then
        fail(file, field, "scalar '" .. a[1] .. "' is not a size name and has no value",
          'name it after a key of sizes or params, or add value = "expression"')
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
  if t.launch == nil then
    fail(file, "launch", "missing launch plan", "add launch = function(s) return {grid = {...}, block = {...}} end")
  end
  want(file, "launch", t.launch, { "function", "table" }, "launch = function(s) return {grid = {...}, block = {...}} end")
  if type(t.launch) == "table" then
    local lok, lerr = launch_result_ok(t.launch)
    if not lok then fail(file, "launch", lerr) end
  end
  task.launch = guard(file, "launch", t.launch, launch_result_ok)

  -- reference
  local ref = t.reference
  if ref == nil or ref == "baseline" then
    task.reference = { baseline = true }
  elseif type(ref) == "table" then
    known_fields(file, "reference", ref, M.FIELDS.reference)
    check_type(file, "reference.source", ref.source, "string", 'reference = {source = "gemm_ref.cu", entry = "gemm_ref"}')
    check_type(file, "reference.entry", ref.entry, "string")
    if ref.precision ~= nil then one_of(file, "reference.precision", ref.precision, M.PRECISIONS, 'precision = "f64"') end
    if ref.launch ~= nil then
      want(file, "reference.launch", ref.launch, { "function", "table" }, "launch = function(s) return {grid = {...}, block = {...}} end")
      if type(ref.launch) == "table" then
        local lok, lerr = launch_result_ok(ref.launch)
        if not lok then fail(file, "reference.launch", lerr) end
      end
    end
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
      if want.role == "output" or want.role == "inout" then
        if pt.dtype ~= out_dtype then
          fail(file, "reference", string.format("parameter %d '%s' should be %s (precision %s)", i, p.name,
            out_dtype == "f64" and "double*" or out_dtype, out_dtype))
        end
      elseif pt.ctype ~= want.ctype then
        fail(file, "reference", string.format("parameter %d '%s' is %s, the task says %s", i, p.name, pt.ctype, want.ctype))
      end
    end
    task.reference = { source = rsrc, path = rpath, entry = ref.entry, precision = out_dtype,
      launch = ref.launch and guard(file, "reference.launch", ref.launch, launch_result_ok) or task.launch }
  else
    fail(file, "reference", "must be a table or \"baseline\", not " .. describe(ref), 'reference = {source = "x_ref.cu", entry = "x_ref"}')
  end

  -- tolerance: tighten only; defaults documented in docs/TASKS.md
  local tol = t.tolerance or {}
  check_type(file, "tolerance", tol, "table", "tolerance = { rel = 1e-5 }")
  known_fields(file, "tolerance", tol, M.FIELDS.tolerance)
  if tol.rel ~= nil then want(file, "tolerance.rel", tol.rel, "number", "rel = 1e-5") end
  if tol.max_abs ~= nil then
    want(file, "tolerance.max_abs", tol.max_abs, "number", "max_abs = 1e-3")
    if not (tol.max_abs > 0) then fail(file, "tolerance.max_abs", "must be above 0, not " .. tostring(tol.max_abs)) end
  end
  if tol.deterministic ~= nil then
    one_of(file, "tolerance.deterministic", tol.deterministic, { "exact", "tolerance" }, 'deterministic = "exact"')
  end
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
  local function cost_result_ok(c)
    if type(c) ~= "table" then return nil, "must return {flops = number, bytes = number}, not " .. describe(c) end
    for _, k in ipairs(sorted_any(c)) do
      if type(k) ~= "string" or not ({ flops = 1, bytes = 1, unit = 1 })[k] then
        local near = type(k) == "string" and M.closest(k, M.FIELDS.cost)
        return nil, string.format("returned an unknown field '%s'%s (fields: flops, bytes, unit)", tostring(k),
          near and ("; did you mean '" .. near .. "'?") or "")
      end
    end
    for _, k in ipairs({ "flops", "bytes" }) do
      if type(c[k]) ~= "number" or c[k] ~= c[k] or c[k] < 0 then
        return nil, string.format("%s must be a non-negative number, not %s", k, describe(c[k]))
      end
    end
    return true
  end
  task.cost = guard(file, "cost", t.cost, cost_result_ok)
  local function cost_at(size, label)
    local okc, c = M.guarded_pcall(string.format("the cost function of %s", file), t.cost, size)
    if not okc then fail(file, "cost", string.format("cost(sizes.%s) failed: %s", label, tostring(c))) end
    local okr, rerr = cost_result_ok(c)
    if not okr then
      fail(file, "cost", string.format("cost(sizes.%s) %s", label, rerr), "return {flops = ..., bytes = ...}")
    end
    return c
  end
  local p0 = M.default_point(t.params)
  local c = cost_at(M.with_params(t.sizes.bench, p0), "bench")
  if t.unit ~= nil then one_of(file, "unit", t.unit, M.UNITS, 'unit = "fp32"') end
  if c.unit ~= nil then one_of(file, "cost().unit", c.unit, M.UNITS, 'unit = "fp32"') end
  task.unit = t.unit or c.unit or "fp32"

  -- tunable parameters (passed as -D defines); only those the kernel uses
  task.params = t.params or {}
  if t.constraint ~= nil and type(t.constraint) ~= "function" then
    fail(file, "constraint", "must be a function(point) returning true for valid parameter points, not " .. describe(t.constraint))
  end
  task.constraint = guard(file, "constraint", t.constraint)
  check_type(file, "params", task.params, "table", "params = {TILE = {16, 32, 64}}")
  local idents
  for _, k in ipairs(sorted_any(task.params)) do
    local v = task.params[k]
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      fail(file, "params", "bad parameter name " .. describe(k), "params = {TILE = {16, 32, 64}}")
    end
    if type(v) ~= "table" or #v == 0 then fail(file, "params." .. k, "must list its values, e.g. {16, 32, 64}, not " .. describe(v)) end
    check_list(v, "params." .. k, "params = {" .. k .. " = {16, 32, 64}}")
    for i, x in ipairs(v) do
      if type(x) ~= "number" and type(x) ~= "string" then
        fail(file, string.format("params.%s[%d]", k, i), "a value is a number or a string (passed as -D" .. k .. "=value), not "
          .. describe(x))
      end
    end
    -- a parameter only the sidecar uses (a grid size, a partial-sum count) is fine: the
    -- sidecar names it besides its declaration
    local side = util.read_file(file) or ""
    local _, uses = (" " .. side .. " "):gsub("[^%w_]" .. k .. "[^%w_]", "")
    if not src:find(k, 1, true) and uses < 2 then
      if not idents then
        idents = {}
        local seen = {}
        for w in src:gsub("//[^\n]*", ""):gmatch("[%a_][%w_]*") do
          if not seen[w] and w:match("%u") and #w > 1 then seen[w] = true idents[#idents + 1] = w end
        end
      end
      local near = M.closest(k, idents)
      fail(file, "params." .. k, "the kernel never uses " .. k .. (near and ("; did you mean '" .. near .. "'?") or ""),
        near and ("rename it " .. near) or "remove it")
    end
  end
  if t.options ~= nil then
    check_type(file, "options", t.options, "table", 'options = {"--use_fast_math"}')
    check_list(t.options, "options", 'options = {"--use_fast_math"}')
    local checker = require(task.backend == "host" and "kloop.eval.compile_host" or "kloop.eval.compile")
    for i, o in ipairs(t.options) do
      want(file, "options[" .. i .. "]", o, "string", 'options = {"--use_fast_math"}')
      local ok, oerr = checker.check_option(o)
      if not ok then fail(file, "options[" .. i .. "]", oerr, "see docs/TASKS.md, options") end
    end
  end
  task.options = t.options or {}
  -- profiler metrics the task wants besides the defaults (docs/PROFILING.md)
  if t.metrics ~= nil then
    check_type(file, "metrics", t.metrics, "table")
    local list, merr = require("kloop.eval.profile").metric_list(t.metrics)
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
  if t.flush_cache ~= nil then want(file, "flush_cache", t.flush_cache, "boolean", "flush_cache = true") end
  task.flush_cache = t.flush_cache
  if task.flush_cache == nil then task.flush_cache = task.backend == "cuda" end
  -- every size and launch plan must evaluate now, not halfway through a run
  -- (at the default point: the first value of each parameter)
  for _, case in ipairs(M.cases(task)) do
    plan.for_task(task, case.size, file, p0)
    M.concrete_args(task, case.size, p0)
    if not case.bench then cost_at(M.with_params(case.size, p0), case.label:gsub("^check(%d+)", "check[%1]")) end
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

return M
