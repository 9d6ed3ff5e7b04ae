-- kloop.core.prof: what the main process asks of CUPTI (kl_cupti_load, kl_prof_new,
-- kl_prof_passes): whether the library opens, and whether its Profiler Host API can plan
-- metrics for a chip (no GPU needed). The worker's CUDA backend drives the profiler
-- itself (kloop.worker.backend_cuda); everything else goes through here.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- Opens libcupti (the same search the worker's profiler makes): its path, or nil, msg.
function M.load()
  local err = ffi.new("kl_err")
  if C.kl_cupti_load(err) ~= 0 then return nil, ffi.string(err.msg) end
  return ffi.string(C.kl_cupti_path())
end

-- The replay passes the metrics (a list of names) need on a chip ("GH100"): a number,
-- or nil, msg when the Profiler Host API refuses them or does not work here.
function M.passes(chip, metrics)
  local err = ffi.new("kl_err")
  local names = ffi.new("const char*[?]", #metrics, metrics)
  local pp = ffi.new("kl_prof*[1]")
  if C.kl_prof_new(chip, names, #metrics, pp, err) ~= 0 then return nil, ffi.string(err.msg) end
  local n = C.kl_prof_passes(pp[0])
  C.kl_prof_free(pp[0])
  return n
end

return M
