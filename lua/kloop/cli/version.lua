-- kloop.cli.version: `kloop --version`: versions and the backend found.
local core = require("kloop.core.ffi")

local M = {}

function M.backend_line()
  local gpu, err = core.gpu_probe(0)
  if gpu then
    return string.format("backend: cuda: %s (%s, %d SMs), driver CUDA %s, %d GPU%s",
      gpu.name, gpu.arch, gpu.sm_count, core.driver_version_string(gpu.driver_version),
      gpu.device_count, gpu.device_count == 1 and "" or "s"), gpu
  end
  return "backend: host only (no CUDA: " .. err .. ")"
end

function M.main(_args)
  print(string.format("kloop %s (%s, libcurl %s, SQLite %s)", core.version(), jit.version,
    core.curl_version(), core.sqlite_version()))
  local nv = core.nvrtc_version()
  print("nvrtc: " .. (nv or "not found"))
  -- (kloop's own kernels as the build compiled them: kloop.eval.compile.try_shipped)
  local n = require("kloop.native").own_binary_count()
  print(string.format("own kernels: %d binaries shipped%s", n,
    n > 0 and " (the common archs, for the build's NVRTC)" or " (none: compiled at run time)"))
  print((M.backend_line()))
  return 0
end

return M
