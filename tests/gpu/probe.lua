-- tests/gpu/probe.lua: the driver is found at run time and the GPU is described (label gpu).
local core = require("kloop.core.api")
local gpu, err = core.gpu_probe(0)
if not gpu then
  print("SKIP: no GPU here (" .. err .. ")")
  os.exit(77)
end
local function check(cond, msg) if not cond then io.stderr:write("FAIL: ", msg, "\n") os.exit(1) end end
check(gpu.name ~= "", "empty device name")
check(gpu.cc >= 70, "compute capability " .. gpu.cc)
check(gpu.sm_count > 0 and gpu.l2_bytes > 0 and gpu.total_mem > 0, "attributes not read")
check(gpu.driver_version >= 11000, "driver version " .. gpu.driver_version)
-- NVML's hint of the arch (the compiles that start before the probe) is the probe's
local hint = require("kloop.core.gpu").arch_hint(0)
check(hint == gpu.arch, "NVML's arch hint " .. tostring(hint) .. " is not the probe's " .. gpu.arch)
local exe = core.exe_path()
local p = io.popen(exe .. " --version")
local out = p:read("*a")
p:close()
check(out:find("backend: cuda: " .. gpu.name, 1, true), "--version does not name the GPU:\n" .. out)
p = io.popen(exe .. " doctor")
local doc = p:read("*a")
p:close()
check(doc:find("ok       GPU", 1, true), "doctor does not report the GPU:\n" .. doc)
io.write(out, doc)
print(string.format("PASS: %s %s (NVML's hint too), %d SMs, L2 %d MB, driver CUDA %s", gpu.name, gpu.arch, gpu.sm_count,
  math.floor(gpu.l2_bytes / 2^20), core.driver_version_string(gpu.driver_version)))
