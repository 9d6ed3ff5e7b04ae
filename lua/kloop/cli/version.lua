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
  print((M.backend_line()))
  return 0
end

return M
