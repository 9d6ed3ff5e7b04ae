-- kloop.eval.ctypes: C types as a sidecar and a kernel spell them, and a kernel's
-- parameter list read from its source (a CUDA __global__ function or a host C function).
local fields = require("kloop.eval.task_fields")
local sidecar = require("kloop.eval.sidecar")

local M = {}

-- C parameter types kloop knows, with the element dtype for pointers.
M.ctypes = {
  float = "f32", double = "f64", half = "f16", __half = "f16", __nv_bfloat16 = "bf16",
  int = "i32", ["unsigned"] = "u32", ["unsigned int"] = "u32", int32_t = "i32", uint32_t = "u32",
  ["long long"] = "i64", int64_t = "i64", ["unsigned char"] = "u8", uint8_t = "u8",
  ["signed char"] = "i8", int8_t = "i8", char = "i8", size_t = "i64",
}

-- CUDA's vector types: the scalar dtype and the lanes. A buffer of them is filled,
-- compared and hashed lane by lane (count * lanes elements of the scalar dtype).
M.vectors = {
  float2 = { "f32", 2 }, float4 = { "f32", 4 }, double2 = { "f64", 2 }, int2 = { "i32", 2 }, int4 = { "i32", 4 },
  uint2 = { "u32", 2 }, uint4 = { "u32", 4 }, half2 = { "f16", 2 }, __half2 = { "f16", 2 },
  __nv_bfloat162 = { "bf16", 2 },
}
for name, v in pairs(M.vectors) do M.ctypes[name] = v[1] end

-- The type names a sidecar may use, for messages.
M.KNOWN = "float, double, half, __nv_bfloat16, int, unsigned, int64_t, uint8_t, int8_t, "
  .. "float2, float4, double2, int2, int4, uint2, uint4, half2, __nv_bfloat162 (or pointers to them)"

-- Unit roundoff of the floating dtypes: what rounding to the type alone costs in relative
-- error (a tolerance below it cannot be met by any kernel that stores that type).
M.ROUNDOFF = { f16 = 2 ^ -11, bf16 = 2 ^ -8, f32 = 2 ^ -24, f64 = 2 ^ -53 }

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
  local vec = M.vectors[base]
  return { ctype = t, base = base, pointer = is_ptr, const = is_const, dtype = M.ctypes[base], lanes = vec and vec[2] or 1 }
end

-- The element type of a buffer at a point (docs/TASKS.md, "Element types"): `type_fn`
-- (the arg's `type = function(p)`, or a string) names it, else every identifier of the
-- written base type that is a parameter of the point is replaced by its value (Kernel
-- Tuner's `floatvector` = float or float4). Returns the parse_ctype of the element
-- (dtype nil when unknown) and the name it resolved to.
function M.element_at(written, type_fn, point)
  local ct = M.parse_ctype(written)
  local base = ct.base
  if type_fn ~= nil then
    base = type(type_fn) == "function" and type_fn(point or {}) or type_fn
    if type(base) ~= "string" then return { dtype = nil }, tostring(base) end
    base = M.parse_ctype(base).base
  elseif point then
    base = base:gsub("[%a_][%w_]*", function(w)
      local v = point[w]
      if type(v) == "string" or type(v) == "number" then return tostring(v) end
    end)
    base = M.parse_ctype(base).base
  end
  local e = M.parse_ctype(base)
  return e, base
end

-- The parameters named in a written base type ("floatvector", "vec<T>"), sorted.
local function params_in(base, params)
  local out, seen = {}, {}
  if type(params) ~= "table" then return out end
  for w in base:gmatch("[%a_][%w_]*") do
    if params[w] ~= nil and not seen[w] then seen[w] = true out[#out + 1] = w end
  end
  table.sort(out)
  return out
end

-- One argument's C type as the task declares it (args[i]: {name, type, type = ...}):
-- the record task.args holds ({name, ctype, dtype, lanes, elem, pointer, type_fn}), the
-- element type resolved at the default point p0. Refuses, naming the field and the fix,
-- a type kloop does not know at some value of the parameters it names, a `type` that is
-- neither a string nor a function, and scalars it cannot pass (vectors, half).
function M.check_arg(file, field, a, ct, t, p0)
  local fail = fields.fail
  local type_fn = a.type
  if type_fn ~= nil then
    fields.want(file, field .. ".type", type_fn, { "string", "function" },
      'type = function(p) return p.VEC == 4 and "float4" or "float" end')
    if type(type_fn) == "function" then type_fn = sidecar.guard(file, field .. ".type", type_fn) end
  end
  local named = type_fn == nil and params_in(ct.base, t.params) or {}
  local function resolve(point, where)
    local okr, e, name = pcall(M.element_at, ct.ctype, type_fn, point)
    if not okr then fail(file, field .. ".type", tostring(type(e) == "table" and e.message or e)) end
    if not e.dtype then
      fail(file, where, string.format("unknown type '%s'%s", tostring(name),
        name ~= ct.base and (" (what " .. ct.base .. " stands for here)") or ""),
        "use one of " .. M.KNOWN .. (type_fn == nil and #named == 0 and ct.dtype == nil
          and ', or say what it stands for: type = "float4" or type = function(p) ... end' or ""))
    end
    return e
  end
  local e = resolve(p0, type_fn ~= nil and (field .. ".type") or field)
  -- a type a parameter names must be known at each of its values, not only the first
  for _, k in ipairs(named) do
    for j, v in ipairs(type(t.params[k]) == "table" and t.params[k] or {}) do
      local p = {}
      for pk, pv in pairs(p0) do p[pk] = pv end
      p[k] = v
      local ej = resolve(p, string.format("params.%s[%d]", k, j))
      if ct.pointer and ej.dtype ~= e.dtype then
        fail(file, string.format("params.%s[%d]", k, j), string.format(
          "makes %s's element %s (%s), its first value %s (%s): the lanes may change with a parameter, the scalar type may not",
          a[1], tostring(v), ej.dtype, tostring(p0[k]), e.dtype), "keep one scalar type (float and float4 are both float)")
      end
    end
  end
  if not ct.pointer then
    if e.lanes > 1 then
      fail(file, field, string.format("scalar '%s' of vector type %s is not supported", a[1], e.base),
        "pass its lanes as separate scalars")
    end
    if e.dtype == "f16" or e.dtype == "bf16" then
      fail(file, field, string.format("scalar '%s' of type %s is not supported", a[1], e.base),
        "pass it as a float and convert it in the kernel")
    end
  end
  return { name = a[1], ctype = ct.ctype, dtype = e.dtype, lanes = e.lanes, elem = e.base, pointer = ct.pointer,
    type_fn = type_fn, typed = type_fn ~= nil or #named > 0 or nil }
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
    local ctype, pname = p:match("^(.-)([%a_][%w_]*)$")
    if not ctype or ctype == "" then return nil, "cannot read parameter '" .. p .. "'" end
    out[#out + 1] = { ctype = M.normalize_ctype(ctype), name = pname }
  end
  return out
end

return M
