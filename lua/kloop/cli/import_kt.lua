-- kloop.cli.import_kt: `kloop import-kt FILE.json`: a kloop sidecar from a Kernel Tuner T1 input file.
local args = require("kloop.cli.args")
local util = require("kloop.util")
local taskmod = require("kloop.eval.task")
local cjson = require("cjson")

local M = {}

M.usage = [[
usage: kloop import-kt FILE.json [-o SIDECAR.lua] [--force]

Reads a Kernel Tuner T1 input file (KernelSpecification: KernelFile, KernelName,
Arguments, ProblemSize, GridDivX/Y/Z, LocalSize, CompilerOptions; ConfigurationSpace:
TuningParameters, Conditions) and writes a kloop task sidecar next to the kernel
(default: the kernel's name with .lua). What cannot be mapped is refused with the
file, the field and the fix. Check the result with `kloop compile SIDECAR.lua`.
Exit: 0 written, 1 refused or error, 2 bad usage.
]]

-- T1 element types kloop has (a vector type's Size counts its vectors, as a task's does).
local TYPES = { float = "float", double = "double", half = "half", int32 = "int", uint32 = "unsigned",
  int64 = "int64_t", int8 = "int8_t", uint8 = "uint8_t", float2 = "float2", float4 = "float4", double2 = "double2",
  int2 = "int2", int4 = "int4" }

local Refusal = {}

-- Bytes per element of a kloop type.
local function ffi_size(ty)
  return ({ float = 4, double = 8, half = 2, int = 4, unsigned = 4, int64_t = 8, int8_t = 1, uint8_t = 1, float2 = 8,
    float4 = 16, double2 = 16, int2 = 8, int4 = 16 })[ty]
end

local function refuse(file, field, problem, fix)
  error(setmetatable({ message = string.format("%s: %s: %s (fix: %s)", file, field, problem, fix) }, Refusal), 0)
end

-- A T1 value list, "[32, 64, 128]" or "['a', 'b']" (a Python literal), or a JSON list.
local function parse_values(file, field, v)
  if type(v) == "table" then return v end
  if type(v) ~= "string" then refuse(file, field, "expected a list of values", 'write "Values": "[32, 64]"') end
  local body = v:match("^%s*%[(.*)%]%s*$")
  if not body then
    refuse(file, field, string.format("cannot read the value list %q (only a literal list is mapped)", v),
      'list the values: "Values": "[32, 64, 128]"')
  end
  local out = {}
  for item in (body .. ","):gmatch("([^,]*),") do
    item = item:gsub("^%s+", ""):gsub("%s+$", "")
    if item ~= "" then
      local n = tonumber(item)
      local s = item:match("^'([%w_%.]*)'$") or item:match('^"([%w_%.]*)"$')
      if n then out[#out + 1] = n
      elseif s then out[#out + 1] = s
      elseif item == "True" or item == "False" then out[#out + 1] = item == "True" and 1 or 0
      else refuse(file, field, "cannot read the value '" .. item .. "'", "use numbers or quoted names") end
    end
  end
  if #out == 0 then refuse(file, field, "the value list is empty", 'list the values: "Values": "[32, 64]"') end
  return out
end

-- A restriction (a Python expression over the parameters) as Lua, fenced: parameter
-- names, numbers, comparisons, arithmetic, and/or/not, parentheses.
local function translate_condition(file, field, expr, params)
  if type(expr) ~= "string" then refuse(file, field, "expected an expression string", '"Expression": "block_size_x * tile <= 1024"') end
  local out, i, n = {}, 1, #expr
  while i <= n do
    local c = expr:sub(i, i)
    local word = expr:match("^[%a_][%w_]*", i)
    local num = expr:match("^%d+%.?%d*", i)
    local op2 = expr:sub(i, i + 1)
    if c:match("%s") then out[#out + 1] = " " i = i + 1
    elseif word then
      if word == "and" or word == "or" or word == "not" then out[#out + 1] = " " .. word .. " "
      elseif word == "True" or word == "False" then out[#out + 1] = word == "True" and "true" or "false"
      elseif params[word] then out[#out + 1] = "p." .. word
      else
        refuse(file, field, string.format("'%s' in %q is not a tunable parameter", word, expr),
          "write the restriction over the TuningParameters only")
      end
      i = i + #word
    elseif num then out[#out + 1] = num i = i + #num
    elseif op2 == "//" then out[#out + 1] = "//" i = i + 2 -- floor division, rewritten below
    elseif op2 == "**" then out[#out + 1] = "^" i = i + 2
    elseif op2 == "!=" then out[#out + 1] = "~=" i = i + 2
    elseif op2 == "==" or op2 == "<=" or op2 == ">=" then out[#out + 1] = op2 i = i + 2
    elseif c:match("[%+%-%*/%%<>%(%)]") then out[#out + 1] = c i = i + 1
    else
      refuse(file, field, string.format("cannot map '%s' in %q", c, expr),
        "use parameters, numbers, + - * / // % **, comparisons, and/or/not")
    end
  end
  local lua = table.concat(out):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
  -- a // b -> floor(a / b) for simple operands
  lua = lua:gsub("([%w_%.]+)%s*//%s*([%w_%.]+)", "floor(%1 / %2)")
  if lua:find("//", 1, true) then
    refuse(file, field, "'//' between expressions is not mapped: " .. expr, "write floor division between two names or numbers")
  end
  return lua
end

-- The names a grid divisor list multiplies (Kernel Tuner divides the problem size by
-- their product and rounds up).
local function grid_div(file, field, v, params, default, fixed)
  if v == nil or v == cjson.null then v = default end
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" then
    refuse(file, field, "expected a list of parameter names", '"' .. field:match("[^.]+$") .. '": ["block_size_x"]')
  end
  local parts = {}
  for k, name in ipairs(v) do
    if type(name) == "number" then parts[#parts + 1] = tostring(name)
    elseif type(name) == "string" and params[name] then parts[#parts + 1] = "s." .. name
    elseif type(name) == "string" and fixed[name] then parts[#parts + 1] = fixed[name]
    elseif type(name) == "string" and name:match("^%d+$") then parts[#parts + 1] = name
    else
      refuse(file, string.format("%s[%d]", field, k), string.format("'%s' is not a tunable parameter", tostring(name)),
        "name TuningParameters (or numbers) only")
    end
  end
  return #parts > 0 and table.concat(parts, " * ") or nil
end

-- The sidecar text for a parsed T1 file; kernel_src is the kernel's source.
function M.sidecar(t1, file, kernel_src)
  if type(t1) ~= "table" then refuse(file, "the file", "is not a JSON object", "give a Kernel Tuner T1 input file") end
  local ks, cs = t1.KernelSpecification, t1.ConfigurationSpace
  if type(ks) ~= "table" then refuse(file, "KernelSpecification", "missing", "add the KernelSpecification object") end
  if ks.Language ~= nil and ks.Language ~= "CUDA" then
    refuse(file, "KernelSpecification.Language", "'" .. tostring(ks.Language) .. "' is not mapped",
      'kloop imports CUDA kernels: "Language": "CUDA"')
  end
  local entry = ks.KernelName
  if type(entry) ~= "string" then refuse(file, "KernelSpecification.KernelName", "missing", 'add "KernelName": "my_kernel"') end
  if type(ks.KernelFile) ~= "string" then refuse(file, "KernelSpecification.KernelFile", "missing", 'add "KernelFile": "my_kernel.cu"') end

  -- tunables
  local params, pnames = {}, {}
  local tps = type(cs) == "table" and cs.TuningParameters or {}
  for i, tp in ipairs(tps) do
    local field = string.format("ConfigurationSpace.TuningParameters[%d]", i)
    if type(tp.Name) ~= "string" or not tp.Name:match("^[%a_][%w_]*$") then
      refuse(file, field .. ".Name", "a parameter name is an identifier", '"Name": "block_size_x"')
    end
    local vals = parse_values(file, field .. ".Values", tp.Values)
    -- the Default goes first: kloop compiles a task's kernel at the first values
    for j = 2, #vals do
      if vals[j] == tp.Default then table.remove(vals, j) table.insert(vals, 1, tp.Default) break end
    end
    params[tp.Name] = vals
    pnames[#pnames + 1] = tp.Name
  end
  local conds = {}
  for i, c in ipairs(type(cs) == "table" and type(cs.Conditions) == "table" and cs.Conditions or {}) do
    local field = string.format("ConfigurationSpace.Conditions[%d].Expression", i)
    conds[#conds + 1] = "(" .. translate_condition(file, field, c.Expression, params) .. ")"
  end

  -- the problem size: one size name per dimension
  local ps = ks.ProblemSize
  if ps == nil then
    refuse(file, "KernelSpecification.ProblemSize", "missing (a grid from GlobalSize expressions is not mapped)",
      'give "ProblemSize": [N, ...] with "GridDivX": [...]')
  end
  if type(ps) == "number" then ps = { ps } end
  local dims, size = { "NX", "NY", "NZ" }, {}
  for d = 1, #ps do
    local v = ps[d]
    if type(v) ~= "number" or v < 1 or v ~= math.floor(v) then
      refuse(file, string.format("KernelSpecification.ProblemSize[%d]", d), "a size is a positive integer, not " .. tostring(v),
        "write the problem size as numbers")
    end
    if d > 3 then refuse(file, "KernelSpecification.ProblemSize", "has more than 3 dimensions", "give 1 to 3 numbers") end
    size[d] = v
  end

  -- block: LocalSize names (the block size names) or numbers
  local ls = type(ks.LocalSize) == "table" and ks.LocalSize or {}
  local block, bnames, fixed_defs, fixed = {}, {}, {}, {}
  for d, axis in ipairs({ "X", "Y", "Z" }) do
    local v = ls[axis]
    local default = ({ "block_size_x", "block_size_y", "block_size_z" })[d]
    if v == nil or v == cjson.null then v = params[default] and default or "1" end
    v = tostring(v)
    if v:match("^%d+$") then
      block[d] = v
      fixed[default] = v
      if kernel_src:find(default, 1, true) and not params[default] then
        -- Kernel Tuner defines block_size_x/y/z in every compile; kloop passes the fixed ones
        fixed_defs[#fixed_defs + 1] = string.format('"-D%s=%s"', default, v)
      end
    elseif params[v] then block[d] = "s." .. v bnames[d] = v
    else
      refuse(file, "KernelSpecification.LocalSize." .. axis, string.format("'%s' is neither a number nor a tunable parameter", v),
        "name a TuningParameter or give a number")
    end
  end
  local grid = {}
  for d = 1, #size do
    local axis = ({ "X", "Y", "Z" })[d]
    local div = grid_div(file, "KernelSpecification.GridDiv" .. axis, ks["GridDiv" .. axis], params,
      { bnames[d] or ({ "block_size_x", "block_size_y", "block_size_z" })[d] }, fixed)
    if div == "1" then div = nil end
    grid[d] = div and string.format("cdiv(s.%s, %s)", dims[d], div) or ("s." .. dims[d])
  end

  -- arguments, against the kernel's own parameter list
  local kparams, kerr = taskmod.kernel_params(kernel_src, entry, false)
  if not kparams then
    refuse(file, "KernelSpecification.KernelName", kerr .. " in " .. ks.KernelFile, "name the kernel's __global__ function")
  end
  local kargs = ks.Arguments or {}
  if #kargs ~= #kparams then
    refuse(file, "KernelSpecification.Arguments", string.format("lists %d arguments, %s takes %d", #kargs, entry, #kparams),
      "list one argument per kernel parameter, in order")
  end
  local argl, bytes = {}, {}
  local scalar_size = {}
  for i, a in ipairs(kargs) do
    local field = string.format("KernelSpecification.Arguments[%d]", i)
    local kp = kparams[i]
    local name = type(a.Name) == "string" and a.Name:match("^[%a_][%w_]*$") and a.Name or kp.name
    local mt = a.MemoryType
    if mt == "Local" or mt == "Symbol" then
      refuse(file, field .. ".MemoryType",
        "'" .. mt .. "' (constant or shared memory arguments, Kernel Tuner's cmem_args) is not imported",
        "declare it in the sidecar's symbols = {...} (docs/TASKS.md, \"Symbols filled from the host\") and drop it from Arguments")
    end
    local ty = TYPES[a.Type]
    if not ty then
      refuse(file, field .. ".Type", "'" .. tostring(a.Type) .. "' is not mapped (custom types are not supported)",
        "use float, double, half, int32, uint32, int64, int8, uint8, float2, float4, double2, int2 or int4")
    end
    local kt = taskmod.parse_ctype(kp.ctype)
    if mt == "Vector" then
      if not kt.pointer or kt.base ~= taskmod.parse_ctype(ty).base then
        refuse(file, field .. ".Type", string.format("%s buffer, but the kernel's parameter %d is '%s %s'", a.Type, i, kp.ctype, kp.name),
          "make the T1 file and the kernel agree")
      end
      local n = a.Size
      if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then
        refuse(file, field .. ".Size", "a buffer needs its element count (a positive integer), not " .. tostring(n), '"Size": 1048576')
      end
      -- a count equal to the problem size (or its product) follows the size
      local sz = tostring(n)
      if n == size[1] then sz = dims[1]
      elseif #size >= 2 and n == size[1] * size[2] then sz = dims[1] .. "*" .. dims[2]
      elseif #size == 3 and n == size[1] * size[2] * size[3] then sz = dims[1] .. "*" .. dims[2] .. "*" .. dims[3] end
      local role
      local at = a.AccessType or "ReadWrite"
      if at == "ReadOnly" then role = kt.const and "" or ", input = true"
      elseif at == "WriteOnly" then role = ", output = true"
      elseif at == "ReadWrite" then role = ", inout = true"
      else
        refuse(file, field .. ".AccessType", "'" .. tostring(at) .. "' is not one of ReadOnly, WriteOnly, ReadWrite",
          '"AccessType": "ReadOnly"')
      end
      local init = ""
      if at ~= "WriteOnly" then
        local ft = a.FillType or "Random"
        if ft == "Random" then init = ', init = "uniform(0,1)"'
        elseif ft == "Constant" and type(a.FillValue) == "number" then init = string.format(', init = "const(%s)"', tostring(a.FillValue))
        else
          refuse(file, field .. ".FillType", "'" .. tostring(ft) .. "' is not mapped", 'use "Random" or "Constant" with a FillValue')
        end
      end
      argl[#argl + 1] = string.format('    { %q, %q, size = %q%s%s },', name, kp.ctype, sz, role, init)
      bytes[#bytes + 1] = string.format("%d * (%s)", ffi_size(ty), (sz:gsub("(%u+)", "s.%1")))
    elseif mt == "Scalar" then
      if ty:match("%d$") then
        refuse(file, field .. ".Type", "a scalar of vector type " .. ty .. " is not supported", "pass its lanes as separate scalars")
      end
      if kt.pointer then
        refuse(file, field .. ".MemoryType",
          string.format("Scalar, but the kernel's parameter %d '%s %s' is a pointer", i, kp.ctype, kp.name),
          '"MemoryType": "Vector" with a Size')
      end
      local v = a.FillValue
      if type(v) ~= "number" then refuse(file, field .. ".FillValue", "a scalar needs its value", '"FillValue": 1024') end
      local value = tostring(v)
      for d = 1, #size do if v == size[d] and not scalar_size[d] then value = dims[d] scalar_size[d] = true break end end
      argl[#argl + 1] = string.format('    { %q, %q, value = %s },', name, kp.ctype,
        value:match("^%u") and string.format("%q", value) or value)
    else
      refuse(file, field .. ".MemoryType", "'" .. tostring(mt) .. "' is not one of Vector, Scalar", '"MemoryType": "Vector"')
    end
  end

  -- options: the file's compiler options (fenced like a task's) and fixed block sizes
  local opts = {}
  for i, o in ipairs(ks.CompilerOptions or {}) do
    local ok, oerr = require("kloop.eval.compile").check_option(tostring(o))
    if not ok then refuse(file, string.format("KernelSpecification.CompilerOptions[%d]", i), oerr, "remove it or use an allowed option") end
    opts[#opts + 1] = string.format("%q", o)
  end
  for _, d in ipairs(fixed_defs) do opts[#opts + 1] = d end

  local bench, check1, check2 = {}, {}, {}
  for d = 1, #size do
    bench[#bench + 1] = string.format("%s = %d", dims[d], size[d])
    -- a smaller size that is not a multiple of any tile, and a tiny one
    check1[#check1 + 1] = string.format("%s = %d", dims[d], math.max(1, math.min(size[d], ({ 1000, 383, 37 })[d])))
    check2[#check2 + 1] = string.format("%s = %d", dims[d], math.min(size[d], 3))
  end
  local plist = {}
  for _, n in ipairs(pnames) do
    local vals = {}
    for j, v in ipairs(params[n]) do vals[j] = type(v) == "string" and string.format("%q", v) or tostring(v) end
    plist[#plist + 1] = string.format("    %s = { %s },", n, table.concat(vals, ", "))
  end
  local out = {}
  local function w(s) out[#out + 1] = s end
  w(string.format("-- %s: imported from %s by kloop import-kt (Kernel Tuner T1); docs/TASKS.md", ks.KernelFile, util.basename(file)))
  w("return kloop.task {")
  w(string.format("  name = %q, entry = %q,", type(t1.General) == "table" and type(t1.General.BenchmarkName) == "string"
    and t1.General.BenchmarkName or entry, entry))
  w(string.format("  kernel = %q,", util.basename(ks.KernelFile)))
  w("  args = {")
  for _, l in ipairs(argl) do w(l) end
  w("  },")
  w("  sizes = {")
  w(string.format("    bench = { %s },", table.concat(bench, ", ")))
  w(string.format("    check = { { %s }, { %s } },", table.concat(check1, ", "), table.concat(check2, ", ")))
  w("  },")
  if #plist > 0 then
    w("  params = {")
    for _, l in ipairs(plist) do w(l) end
    w("  },")
  end
  if #conds > 0 then w(string.format("  constraint = function(p) return %s end,", table.concat(conds, " and "))) end
  w(string.format("  launch = function(s) return { grid = { %s }, block = { %s } } end,",
    table.concat(grid, ", "), table.concat(block, ", ")))
  w("  -- bytes: every buffer once; flops: not in a T1 file, fill it in for a compute-bound kernel")
  w(string.format("  cost = function(s) return { flops = 0, bytes = %s } end,", #bytes > 0 and table.concat(bytes, " + ") or "0"))
  if #opts > 0 then w(string.format("  options = { %s },", table.concat(opts, ", "))) end
  w("}")
  return table.concat(out, "\n") .. "\n"
end


function M.main(argv)
  local opts, pos = args.command("import-kt", argv, { ["-o"] = "value", ["--force"] = "flag" }, M.usage)
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("import-kt", "give one FILE.json", M.usage) end
  local file = pos[1]
  local text = util.read_file(file)
  if not text then util.eprintf("kloop import-kt: cannot read %s\n", file) return 1 end
  local okj, t1 = pcall(cjson.decode, text)
  if not okj then util.eprintf("kloop import-kt: %s: not JSON: %s\n", file, tostring(t1)) return 1 end
  local dir = util.dirname(file)
  local ks = type(t1) == "table" and t1.KernelSpecification
  local kfile = type(ks) == "table" and type(ks.KernelFile) == "string" and ks.KernelFile
  local kpath = kfile and (kfile:sub(1, 1) == "/" and kfile or (dir .. "/" .. kfile))
  local ksrc = kpath and util.read_file(kpath)
  if kfile and not ksrc then
    util.eprintf("kloop import-kt: %s: KernelSpecification.KernelFile: cannot read %s"
      .. " (fix: put the kernel next to the T1 file)\n", file, kpath)
    return 1
  end
  local ok, side = pcall(M.sidecar, t1, file, ksrc or "")
  if not ok then
    util.eprintf("kloop import-kt: %s\n", type(side) == "table" and side.message or tostring(side))
    return 1
  end
  local out = opts.o or (kpath:gsub("%.[%w]+$", "") .. ".lua")
  if util.file_exists(out) and not opts.force then
    util.eprintf("kloop import-kt: %s exists (fix: -o another path, or --force)\n", out)
    return 1
  end
  if util.dirname(out) ~= util.dirname(kpath) then
    -- the sidecar names its kernel relative to itself, and kloop finds it by the kernel's name
    util.eprintf("kloop import-kt: %s: -o %s is not next to the kernel %s (fix: write the sidecar into %s)\n", file, out, kpath,
      util.dirname(kpath))
    return 1
  end
  if not util.write_file(out, side) then util.eprintf("kloop import-kt: cannot write %s\n", out) return 1 end
  print(string.format("wrote %s (task %s, kernel %s)", out, t1.KernelSpecification.KernelName, kpath))
  return 0
end

return M
