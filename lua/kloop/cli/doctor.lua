-- kloop.cli.doctor: one line per component, ok or missing with the fix.
-- Each check asks the module that does the work (kloop.core.gpu, kloop.core.nvrtc with
-- kloop.eval.compile, kloop.core.prof, kloop.eval.compile_host), so what doctor says is
-- what a run would find.
local core = require("kloop.core.ffi")
local gpumod = require("kloop.core.gpu")
local nvrtc = require("kloop.core.nvrtc")
local prof = require("kloop.core.prof")
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local M = {}

-- Each check returns ok (boolean), detail, fix (when not ok), required_for_cpu (boolean).
local checks = {}

checks[#checks + 1] = function()
  local gpu, err = gpumod.probe(0)
  M.gpu = gpu
  if gpu then
    return true, "GPU", string.format("%s (%s, %d SMs, %.0f GiB), driver CUDA %s, %d device(s)",
      gpu.name, gpu.arch, gpu.sm_count, gpu.total_mem / 2^30,
      gpumod.driver_version_string(gpu.driver_version), gpu.device_count)
  end
  return false, "GPU", err, "run on a machine with an NVIDIA GPU and driver; CPU paths work without one"
end

-- What works, not what opens: NVRTC compiles a tiny kernel (uncached, in a child like
-- every compile), which needs libnvrtc-builtins too; CUPTI's Profiler Host API plans
-- the passes of one metric (no GPU needed), which needs libnvperf_host. Both are
-- loaded by name by their libraries, so a library that opens can still fail here.
M.probe_kernel = 'extern "C" __global__ void kloop_doctor(float *x) { x[threadIdx.x] *= 2.0f; }\n'
M.probe_chip = "GH100"

checks[#checks + 1] = function()
  local v, err = nvrtc.version()
  local fix = "install the CUDA toolkit, or set KLOOP_CUDA_HOME to its folder"
  if not v then return false, "NVRTC", err, fix end
  local from = nvrtc.path()
  local arch = M.gpu and M.gpu.arch or "sm_90"
  local job = require("kloop.eval.compile").compile(M.probe_kernel, { arch = arch, name = "kloop_doctor.cu", no_cache = true })
  if job.ok then
    return true, "NVRTC", string.format("%s (%s): compiled a test kernel for %s", v, from, arch)
  end
  local first = (job.log or ""):match("[^\n]*%S[^\n]*") or "no log"
  return false, "NVRTC", string.format("%s (%s) opens but does not compile: %s", v, from, first),
    "libnvrtc-builtins must be readable beside libnvrtc (reinstall the toolkit's NVRTC), or set KLOOP_CUDA_HOME"
end

checks[#checks + 1] = function()
  -- the same search the worker's profiler makes
  local from = prof.load()
  if not from then
    return false, "CUPTI", "libcupti not found (profiling metrics unavailable)",
      "install the CUDA toolkit's CUPTI, or set KLOOP_CUDA_HOME"
  end
  local passes, perr = prof.passes(M.probe_chip, { "gpu__time_duration.sum" })
  if not passes then
    return false, "CUPTI", from .. " opens but its Profiler Host API fails: " .. perr,
      "libnvperf_host.so must be readable beside libcupti (reinstall the toolkit's CUPTI), or set KLOOP_CUDA_HOME"
  end
  return true, "CUPTI", string.format("%s: Profiler Host API ok (%d pass for a %s metric)", from, passes, M.probe_chip)
end

checks[#checks + 1] = function()
  -- the compiler and the version line every host build's cache key holds
  local compile_host = require("kloop.eval.compile_host")
  local cc, first = compile_host.cc(), compile_host.cc_version()
  if first ~= "unknown" then
    return true, "C compiler", cc .. ": " .. first
  end
  return false, "C compiler", cc .. " not found (host backend unavailable)",
    "apt-get install gcc, or set CC", true
end

checks[#checks + 1] = function()
  local oai, anth = os.getenv("OPENAI_API_KEY"), os.getenv("ANTHROPIC_API_KEY")
  local url = os.getenv("KLOOP_LLM_URL") or os.getenv("OPENAI_BASE_URL")
  if anth and anth ~= "" then return true, "LLM", "Anthropic key set (ANTHROPIC_API_KEY)" end
  if oai and oai ~= "" then
    return true, "LLM", "OpenAI-compatible key set" .. (url and (", base URL " .. url) or "")
  end
  if url and url ~= "" then return true, "LLM", "endpoint " .. url .. " (no key)" end
  return false, "LLM", "no endpoint configured (the tune proposer still works)",
    "set OPENAI_API_KEY or ANTHROPIC_API_KEY, or KLOOP_LLM_URL for a local server"
end

function M.db_check(path)
  path = path or os.getenv("KLOOP_DB") or "kloop.db"
  local dir = util.dirname(path)
  if util.file_exists(path) then
    local f = io.open(path, "r+b")
    if f then f:close() return true, "database", path .. " (exists, writable)" end
    return false, "database", path .. " is not writable", "fix its permissions or pass --db PATH", true
  end
  if sys.dir_writable(dir) then
    return true, "database", path .. " (will be created)"
  end
  return false, "database", "folder " .. dir .. " is not writable", "pass --db PATH in a writable folder", true
end
checks[#checks + 1] = function() return M.db_check(M.db_path) end

function M.main(args)
  for i = 1, #args do
    if args[i] == "-h" or args[i] == "--help" then
      print("usage: kloop doctor [--db PATH]\nChecks each component; exits 0 when the CPU paths work.")
      return 0
    elseif args[i] == "--db" and args[i + 1] then
      M.db_path = args[i + 1]
    elseif args[i]:sub(1, 1) == "-" and args[i - 1] ~= "--db" then
      util.eprintf("kloop doctor: unknown option %s\n", args[i])
      return 2
    end
  end
  local cpu_ok = true
  print(string.format("kloop %s (%s)", core.version(), jit.version))
  for _, check in ipairs(checks) do
    local ok, name, detail, fix, cpu = check()
    if ok then
      print(string.format("ok       %-11s %s", name, detail))
    else
      print(string.format("missing  %-11s %s\n         %-11s fix: %s", name, detail, "", fix))
      if cpu then cpu_ok = false end
    end
  end
  return cpu_ok and 0 or 1
end

return M
