-- kloop.core.api: what scripts see as kloop.core (docs/LUA_API.md): the documented facts
-- (gpu_probe, versions, exe_path) from their wrappers, over the FFI view (kloop.core.ffi:
-- C, ffi, try, the version strings) that kloop.core always was.
local cffi = require("kloop.core.ffi")
local gpu = require("kloop.core.gpu")
local nvrtc = require("kloop.core.nvrtc")
local sys = require("kloop.core.sys")

return setmetatable({
  gpu_probe = gpu.probe,
  driver_version_string = gpu.driver_version_string,
  nvrtc_version = nvrtc.version,
  exe_path = sys.exe_path,
  now = sys.now,
}, { __index = cffi })
