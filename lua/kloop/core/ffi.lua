-- kloop.core.ffi: the FFI view of the C core, declared from the embedded kloop.h.
local ffi = require("ffi")
local native = require("kloop.native")

local M = {}

-- The header is embedded at build time, so the declarations always describe this binary.
-- src: a header text to strip instead (tests).
function M.cdef_text(src)
  src = src or assert(native.embedded("kloop.h"), "kloop.h is not embedded in this binary")
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

-- Versions of kloop and what it was built with.
function M.version() return ffi.string(C.kl_version()) end
function M.curl_version() return ffi.string(C.kl_curl_version()) end
function M.sqlite_version() return ffi.string(C.kl_sqlite_version()) end
function M.cuda_home() return ffi.string(C.kl_cuda_home()) end

-- Thin aliases for callers that still reach these through kloop.core.ffi; each lives
-- in its wrapper (required on first use: the wrappers require this module).
function M.nvrtc_version() return require("kloop.core.nvrtc").version() end
function M.gpu_probe(device, timeout_ms) return require("kloop.core.gpu").probe(device, timeout_ms) end
function M.driver_version_string(v) return require("kloop.core.gpu").driver_version_string(v) end
function M.exe_path() return require("kloop.core.sys").exe_path() end
function M.now() return C.kl_now() end

return M
