-- kloop.core.ffi: the FFI view of the C core, declared from the embedded kloop.h.
local ffi = require("ffi")
local native = require("kloop.native")

local M = {}

-- The header is embedded at build time, so the declarations always describe this binary.
function M.cdef_text()
  local src = assert(native.embedded("kloop.h"), "kloop.h is not embedded in this binary")
  src = src:gsub("/%*.-%*/", "")           -- block comments
  local out = {}
  for line in src:gmatch("[^\n]*") do
    if not line:match("^%s*#") then out[#out + 1] = line end
  end
  return table.concat(out, "\n")
end

ffi.cdef(M.cdef_text())
M.C = ffi.C
M.ffi = ffi

local C = ffi.C

-- Calls a kl_* function that takes a trailing kl_err*: returns true, or nil, msg, status.
function M.try(fn, ...)
  local err = ffi.new("kl_err")
  local n = select("#", ...)
  local args = { ... }
  args[n + 1] = err
  local st = fn(unpack(args, 1, n + 1))
  if st ~= 0 then return nil, ffi.string(err.msg), st end
  return true
end

function M.version() return ffi.string(C.kl_version()) end
function M.curl_version() return ffi.string(C.kl_curl_version()) end
function M.sqlite_version() return ffi.string(C.kl_sqlite_version()) end
function M.cuda_home() return ffi.string(C.kl_cuda_home()) end
function M.now() return C.kl_now() end

function M.exe_path()
  local buf = ffi.new("char[4096]")
  if C.kl_exe_path(buf, 4096) ~= 0 then return nil end
  return ffi.string(buf)
end

-- GPU facts from a forked probe, so this process never initializes CUDA.
function M.gpu_probe(device, timeout_ms)
  local info = ffi.new("kl_gpu_info")
  local err = ffi.new("kl_err")
  local st = C.kl_cuda_probe_isolated(device or 0, info, timeout_ms or 20000, err)
  if st ~= 0 then return nil, ffi.string(err.msg), st end
  return {
    driver_version = info.driver_version,
    device_count = info.device_count,
    name = ffi.string(info.name),
    cc = info.cc_major * 10 + info.cc_minor,
    arch = string.format("sm_%d%d", info.cc_major, info.cc_minor),
    sm_count = info.sm_count,
    l2_bytes = info.l2_bytes,
    smem_per_block = info.smem_per_block,
    smem_per_block_optin = info.smem_per_block_optin,
    smem_per_sm = info.smem_per_sm,
    max_threads_per_block = info.max_threads_per_block,
    regs_per_block = info.regs_per_block,
    clock_khz = info.clock_khz,
    mem_clock_khz = info.mem_clock_khz,
    mem_bus_width = info.mem_bus_width,
    warp_size = info.warp_size,
    total_mem = tonumber(info.total_mem),
    uuid = ffi.string(info.uuid),
  }
end

-- Starts a child process with framed pipes (kl_proc_spawn): proc cdata, or nil, msg.
-- env_keep: variable-name prefixes passed through (nil keeps the whole environment).
function M.spawn(argv, env_keep)
  local cargv = ffi.new("const char*[?]", #argv + 1, argv)
  cargv[#argv] = nil
  local cenv = nil
  if env_keep then
    cenv = ffi.new("const char*[?]", #env_keep + 1, env_keep)
    cenv[#env_keep] = nil
  end
  local proc = ffi.new("kl_proc")
  local err = ffi.new("kl_err")
  if C.kl_proc_spawn(proc, cargv, cenv, err) ~= 0 then return nil, ffi.string(err.msg) end
  return proc
end

function M.driver_version_string(v)
  return string.format("%d.%d", math.floor(v / 1000), math.floor((v % 1000) / 10))
end

function M.nvrtc_version()
  local maj, min = ffi.new("int[1]"), ffi.new("int[1]")
  local err = ffi.new("kl_err")
  if C.kl_nvrtc_version(maj, min, err) ~= 0 then return nil, ffi.string(err.msg) end
  return string.format("%d.%d", maj[0], min[0])
end

return M
