-- kloop.eval.task: loads and checks a task sidecar (kernels/name.cu + kernels/name.lua).
-- Its parts live beside it: the field checks and did-you-mean (kloop.eval.task_fields),
-- running sidecar code guarded (kloop.eval.sidecar), sizes, points and arguments
-- (kloop.eval.task_sizes) and C types (kloop.eval.ctypes); their names are re-exported.
local util = require("kloop.util")
local plan = require("kloop.eval.plan")
local fields = require("kloop.eval.task_fields")
local sidecar = require("kloop.eval.sidecar")
local sizes = require("kloop.eval.task_sizes")
local ctypes = require("kloop.eval.ctypes")

local M = {}

for _, part in ipairs({ fields, sidecar, sizes, ctypes }) do
  for name, v in pairs(part) do
    if name ~= "call_deadline" then M[name] = v end
  end
end

-- task.call_deadline (docs/TASKS.md) is the sidecar module's setting: reading or setting
-- it here reads or sets that one, so it is not copied above.
setmetatable(M, {
  __index = function(_, k) if k == "call_deadline" then return sidecar.call_deadline end end,
  __newindex = function(t, k, v)
    if k == "call_deadline" then sidecar.call_deadline = v else rawset(t, k, v) end
  end,
})

local fail, describe, sorted_any = fields.fail, fields.describe, fields.sorted_any
local known_fields, want, one_of, check_type = fields.known_fields, fields.want, fields.one_of, fields.check_type
local guard = sidecar.guard

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
  -- the text is read once: a check function is compiled again from it in the worker
  local text = util.read_file(lua_path)
  if not text then return nil, lua_path .. ": cannot read the sidecar" end
  local t, err = sidecar.run_text(text, lua_path)
  if not t then return nil, err end
  local ok2, task = pcall(M.check, t, lua_path, cu_path)
  if not ok2 then
    if type(task) == "table" and task.message then return nil, task.message end
    error(task, 0)
  end
  if task.check then task.check_text = text end
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
  local function check_list(v, field, fix) fields.check_list(file, v, field, fix) end
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
  if t.sizes.promote ~= nil then sizes.check_promote(file, t.sizes.promote, t.sizes.bench) end
  task.sizes = { bench = t.sizes.bench, check = t.sizes.check, hidden = t.sizes.hidden,
    promote = t.sizes.promote ~= nil and sizes.guard_promote(file, t.sizes.promote) or nil }

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
    for _, flag in ipairs({ "input", "output", "inout", "scratch" }) do
      if a[flag] ~= nil then want(file, field .. "." .. flag, a[flag], "boolean", flag .. " = true") end
    end
    local ct = M.parse_ctype(a[2])
    if params and M.normalize_ctype(params[i].ctype) ~= ct.ctype then
      fail(file, field, string.format("type %s does not match the kernel's parameter %d '%s %s'",
        ct.ctype, i, params[i].ctype, params[i].name), "make the sidecar and the kernel agree")
    end
    local arg = ctypes.check_arg(file, field, a, ct, t, M.default_point(t.params))
    if ct.pointer then
      if a.size == nil then fail(file, field .. ".size", "a buffer needs a size (elements)", 'add size = "N"') end
      want(file, field .. ".size", a.size, { "string", "number", "function" }, 'size = "N" (an expression, a number or a function)')
      if a.value ~= nil then
        fail(file, field .. ".value", "a buffer has no value (value is for scalars)", "remove it; init says how a buffer is filled")
      end
      arg.size = guard(file, field .. ".size", a.size)
      local flags = (a.input and 1 or 0) + (a.output and 1 or 0) + (a.inout and 1 or 0) + (a.scratch and 1 or 0)
      if flags > 1 then
        fail(file, field, "give a buffer one role: input, output, inout or scratch",
          "keep one of input = true, output = true, inout = true, scratch = true")
      end
      if a.scratch then
        -- working memory (partial sums): poisoned and guarded, never compared, sized per point
        if ct.const then fail(file, field, "a const pointer cannot be scratch", "drop const or the flag") end
        if a.init ~= nil then
          fail(file, field .. ".init", "a scratch buffer is not filled (kloop poisons it before every launch)", "remove init")
        end
        arg.role = "scratch"
      elseif ct.const or a.input then
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
      if arg.role ~= "output" and arg.role ~= "scratch" then
        arg.dists = sizes.parse_inits(file, field .. ".init", a.init)
      end
    else
      for _, k in ipairs({ "size", "init", "input", "output", "inout", "scratch" }) do
        if a[k] ~= nil then
          fail(file, field .. "." .. k, string.format("scalar '%s' is not a buffer, so it takes no %s", a[1], k),
            'remove it (a scalar is the size of the same name, or value = "expression")')
        end
      end
      if a.value ~= nil then
        want(file, field .. ".value", a.value, { "string", "number", "function" },
          'value = "N / 2" (an expression, a number or a function)')
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

  -- check (docs/TASKS.md "Check functions"): a function of inputs and outputs run in the
  -- worker, in place of the reference (reference omitted or false) or beside it
  if t.check ~= nil then
    want(file, "check", t.check, "function", 'check = function(c) return true end (or false, "why")')
    task.check = t.check
  end
  -- reference
  local ref = t.reference
  if ref == false or (ref == nil and t.check ~= nil) then
    if t.check == nil then
      fail(file, "reference", "the task gives neither a reference nor a check: verification needs one of the two",
        'reference = "baseline" (or {source, entry}), or check = function(c) ... end')
    end
    task.reference = { baseline = true, none = true }
  elseif ref == nil or ref == "baseline" then
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
      local targ = task.args[i]
      local pt = M.parse_ctype(p.ctype)
      if targ.role == "output" or targ.role == "inout" then
        if pt.dtype ~= out_dtype then
          fail(file, "reference", string.format("parameter %d '%s' should be %s (precision %s)", i, p.name,
            out_dtype == "f64" and "double*" or out_dtype, out_dtype))
        end
      elseif targ.role == "scratch" then
        -- (the reference's own working memory: the task's type or the reference precision)
        if not pt.pointer or (pt.dtype ~= targ.dtype and pt.dtype ~= out_dtype) then
          fail(file, "reference", string.format("parameter %d '%s' (scratch) should be a pointer to %s or %s", i, p.name,
            targ.dtype, out_dtype))
        end
      elseif pt.ctype ~= targ.ctype and not (pt.pointer and targ.pointer and pt.dtype == targ.dtype) then
        -- (a float* reference may read a float4 input: the same floats, lane by lane)
        fail(file, "reference", string.format("parameter %d '%s' is %s, the task says %s", i, p.name, pt.ctype, targ.ctype))
      end
    end
    task.reference = { source = rsrc, path = rpath, entry = ref.entry, precision = out_dtype,
      launch = ref.launch and guard(file, "reference.launch", ref.launch, launch_result_ok) or task.launch }
  else
    fail(file, "reference", "must be a table or \"baseline\", not " .. describe(ref), 'reference = {source = "x_ref.cu", entry = "x_ref"}')
  end

  task.symbols = sizes.check_symbols(file, t.symbols, src, not task.reference.baseline and task.reference.source or nil,
    task.backend)
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
  -- the coarsest type an output is stored (or the reference computes) in bounds what
  -- any kernel can meet: half rounding alone costs 4.9e-4, bfloat16's 3.9e-3
  local coarse, coarse_t = 0, nil
  for _, a in ipairs(task.args) do
    local u = (a.role == "output" or a.role == "inout") and ctypes.ROUNDOFF[a.dtype] or 0
    if u > coarse then coarse, coarse_t = u, a.elem end
  end
  local ru = ctypes.ROUNDOFF[task.reference.precision or ""] or 0
  if ru > coarse then coarse, coarse_t = ru, "reference precision " .. task.reference.precision end
  local rel_default = math.max(1e-5, 16 * coarse)
  if tol.rel ~= nil and tol.rel < coarse then
    fail(file, "tolerance.rel", string.format("%g is tighter than a %s output can meet: rounding to it alone costs up to %.2g",
      tol.rel, coarse_t, coarse), string.format("remove it (the default for %s is %.2g) or give rel >= %.2g", coarse_t,
      rel_default, coarse))
  end
  task.tolerance = {
    rel = tol.rel or rel_default,   -- relative L2 norm of the error
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
    -- (an interruption comes with a third value that says where it stopped the code)
    local okc, c, where = M.guarded_pcall(string.format("the cost function of %s", file), t.cost, size)
    if not okc then fail(file, "cost", string.format("cost(sizes.%s) failed: %s", label, tostring(where or c))) end
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
      fail(file, name, string.format("must be %s, not %s", what,
        type(v) == "string" and ("the string \"" .. v .. "\"") or tostring(v)), fix)
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
  -- a library's time for the same work (the report's reference line): kloop.eval.library
  if t.library ~= nil then task.library = require("kloop.eval.library").check_field(file, t.library, task) end
  -- sizes compiled in (docs/TASKS.md, "Sizes compiled in"): -DNAME=value per size, one
  -- binary per case; the kernel and a separate reference must leave the names to kloop
  local srcs = { { path = task.kernel, text = src } }
  if not task.reference.baseline then srcs[2] = { path = task.reference.path, text = task.reference.source } end
  task.sizes_as_defines = sizes.check_sizes_as_defines(file, t.sizes_as_defines, t.sizes.bench, task.params, srcs)
  -- every size and launch plan must evaluate now, not halfway through a run
  -- (at the default point: the first value of each parameter)
  sizes.check_point_counts(task, p0)
  for _, case in ipairs(M.cases(task)) do
    plan.for_task(task, case.size, file, p0)
    M.concrete_args(task, case.size, p0)
    local syms = M.concrete_symbols(task, case.size, p0)
    for k, sy in ipairs(task.symbols) do
      if syms[k].count ~= M.concrete_symbols(task, task.sizes.bench, p0)[k].count then
        fail(file, "symbols[" .. k .. "].count", string.format("%s has %d elements at sizes.%s, %d at bench: a module declares one size",
          sy.name, syms[k].count / sy.lanes, case.label, M.concrete_symbols(task, task.sizes.bench, p0)[k].count / sy.lanes),
          "give it a count that does not depend on the sizes")
      end
    end
    if not case.bench then cost_at(M.with_params(case.size, p0), case.label:gsub("^check(%d+)", "check[%1]")) end
  end
  return task
end

return M
