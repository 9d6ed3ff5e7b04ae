-- kloop.eval.ctypes: C types as a sidecar and a kernel spell them, and a kernel's
-- parameter list read from its source (a CUDA __global__ function or a host C function).
local M = {}

-- C parameter types kloop knows, with the element dtype for pointers.
M.ctypes = {
  float = "f32", double = "f64", half = "f16", __half = "f16", __nv_bfloat16 = "bf16",
  int = "i32", ["unsigned"] = "u32", ["unsigned int"] = "u32", int32_t = "i32", uint32_t = "u32",
  ["long long"] = "i64", int64_t = "i64", ["unsigned char"] = "u8", uint8_t = "u8",
  ["signed char"] = "i8", int8_t = "i8", char = "i8", size_t = "i64",
}

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
