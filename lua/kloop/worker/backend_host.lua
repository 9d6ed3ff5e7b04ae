-- kloop.worker.backend_host: the host (CPU) backend of the evaluation protocol, run in a
-- sandboxed worker. "Device" memory is host memory; a launch is a plain call into the
-- candidate's shared object; time is the monotonic clock around the call.
local core = require("kloop.core.ffi")
local buf = require("kloop.core.buf")
local sys = require("kloop.core.sys")
local ffi = core.ffi
local C = core.C

local M = { name = "host" }

local err = ffi.new("kl_err")
local SCALAR = { f32 = "float", f64 = "double", i32 = "int32_t", u32 = "uint32_t", i64 = "int64_t",
  u8 = "uint8_t", i8 = "int8_t" }

local function check(st)
  if st == 0 then return true end
  return nil, ffi.string(err.msg)
end

-- req: the worker's hello request; req.sandbox = {max_bytes, cpu_seconds, allow_unsandboxed}.
function M.init(req)
  local opts = req.sandbox or {}
  local cpus = 0
  local f = io.open("/proc/cpuinfo")
  local model = "cpu"
  if f then
    for line in f:lines() do
      if line:match("^processor") then cpus = cpus + 1 end
      local m = line:match("^model name%s*:%s*(.+)$")
      if m then model = m end
    end
    f:close()
  end
  M.info = { name = model, arch = "host", cpus = cpus }
  -- A buffer larger than the last-level cache, written between repetitions when the
  -- task asks for cold caches.
  M.flush_bytes = 64 * 2^20
  M.flush_ptr = buf.host_alloc_raw(M.flush_bytes)
  -- What a loaded candidate may still read once Landlock confines the worker: the
  -- loader's folders and cache, and the CPU list libgomp and sysconf read. The folder of
  -- the first object loaded (kloop's compile cache) is added then, by kl_host_load:
  -- this worker's environment does not say where the cache is.
  local read_dirs = { "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache",
    "/sys/devices/system/cpu" }
  local abi = ffi.new("int[1]")
  local ok, msg = check(C.kl_sandbox_enter(opts.max_bytes or 16 * 2^30, opts.cpu_seconds or 600,
    table.concat(read_dirs, "\0") .. "\0", abi, err))
  if not ok then
    if not opts.allow_unsandboxed then return nil, "sandbox: " .. msg end
    M.info.sandbox = "off (" .. msg .. ")"
  elseif abi[0] > 0 then
    M.info.sandbox = "seccomp allow-list + rlimits + Landlock (file reads confined to the compile cache and system libraries)"
  else
    local why = ({ [38] = "the kernel has no Landlock", [95] = "Landlock is not an enabled LSM (lsm= boot option)",
      [1] = "refused (a container's seccomp policy?)" })[-abi[0]] or ("errno " .. -abi[0])
    M.info.sandbox = "seccomp allow-list + rlimits; file reads not confined (Landlock unavailable: " .. why .. ")"
  end
  return M.info
end

-- The protocol passes the argument list once, so launches can call with a typed signature
-- (all pointers as void*: the ABI is the same for every pointer type).
function M.set_signature(args)
  local parts = {}
  for i, a in ipairs(args) do parts[i] = a.pointer and "void*" or SCALAR[a.dtype] end
  M.ctype = ffi.typeof("void (*)(" .. table.concat(parts, ", ") .. ")")
  M.args = args
  -- how each slot of a parameter array is read, parsed once here rather than per launch
  M.slot_ct = {}
  for i, a in ipairs(args) do M.slot_ct[i] = ffi.typeof(a.pointer and "uint64_t*" or (SCALAR[a.dtype] .. "*")) end
end

function M.load(path)
  local h = ffi.new("void*[1]")
  local ok, msg = check(C.kl_host_load(path, h, err))
  if not ok then return nil, msg end
  return { ptr = h[0] }
end

function M.unload(mod)
  if mod and mod.ptr ~= nil then C.kl_host_unload(mod.ptr) mod.ptr = nil end
end

function M.func(mod, entry)
  local p = ffi.new("void*[1]")
  local ok, msg = check(C.kl_host_symbol(mod.ptr, entry, p, err))
  if not ok then return nil, msg end
  return ffi.cast(M.ctype, p[0])
end

-- A global variable of the candidate's object (a table the task fills): its address (a
-- number, like alloc's) and the size the object declares, or nil, msg.
local sym_ptr, sym_bytes = ffi.new("void*[1]"), ffi.new("size_t[1]")
function M.symbol(mod, name)
  local ok, msg = check(C.kl_host_global(mod.ptr, name, sym_ptr, sym_bytes, err))
  if not ok then return nil, msg end
  return tonumber(ffi.cast("uintptr_t", sym_ptr[0])), tonumber(sym_bytes[0])
end

function M.attrs() return {} end
function M.prepare_launch() return true end

local live = {}
function M.alloc(bytes)
  local p = buf.host_alloc_raw(bytes)
  if p == nil then return nil, "out of host memory (" .. bytes .. " bytes)" end
  local addr = tonumber(ffi.cast("uintptr_t", p))
  live[addr] = p
  return addr
end
function M.free(addr) buf.host_free(live[addr]) live[addr] = nil end

local function ptr(addr) return ffi.cast("uint8_t*", addr) end
function M.h2d(dst, src, bytes) ffi.copy(ptr(dst), src, bytes) return true end
function M.d2h(dst, src, bytes) ffi.copy(dst, ptr(src), bytes) return true end
function M.d2d(dst, src, bytes) ffi.copy(ptr(dst), ptr(src), bytes) return true end
function M.fill32(dst, word, count) buf.poison(ptr(dst), count * 4, word) return true end

-- Unpacks the kernel parameter array (pointers to slots) into call arguments. A launch
-- sits inside the timed region: the ctypes come from set_signature and the argument
-- table is reused.
local argv = {}
local void_ptr = ffi.typeof("void*")
local function unpack_params(params)
  for i, a in ipairs(M.args) do
    local v = ffi.cast(M.slot_ct[i], params[i - 1])[0]
    argv[i] = a.pointer and ffi.cast(void_ptr, v) or v
  end
  return argv
end

function M.launch(fn, _grid, _block, _smem, params)
  local a = unpack_params(params)
  fn(unpack(a, 1, #M.args))
  return true
end

-- Guard zones and digests: the same computation as the CUDA backend's kernel, in C.
-- beside (optional): the protocol's host work for while a check runs (the CUDA backend
-- runs it between queueing the check and waiting for it); here, after the check.
function M.check_regions(arr, n, out, beside)
  buf.regions_check(arr, n, out)
  if beside then beside() end
  return true
end

function M.sync() return true end
function M.flush_cache()
  buf.poison(M.flush_ptr, M.flush_bytes, 0x5A5A5A5A)
  return true
end

local t0, t1
function M.timer_start() t0 = sys.now() return true end
function M.timer_stop() t1 = sys.now() return true end
function M.timer_read() return (t1 - t0) * 1e3 end

return M
