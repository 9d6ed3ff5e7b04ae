-- tests/gpu/check_gemm.lua: `kloop check kernels/gemm.cu --json` verifies and times the
-- naive baseline on the GPU (label gpu).
local core = require("kloop.core.api")
local cjson = require("cjson")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local p = io.popen(core.exe_path() .. " check kernels/gemm.cu --json --budget 3")
local out = p:read("*a")
p:close()
local ok, r = pcall(cjson.decode, out)
if not ok then io.stderr:write("FAIL: not JSON:\n", out, "\n") os.exit(1) end
for _, k in ipairs({ "verdict", "reason", "time_ms", "ci_ms", "samples", "resources" }) do
  if r[k] == nil then io.stderr:write("FAIL: no field " .. k .. "\n") os.exit(1) end
end
if not (r.clocks and r.clocks.after and r.clocks.after.sm_mhz > 0) then
  io.stderr:write("FAIL: no GPU clocks recorded during the timing\n") os.exit(1)
end
if not (r.measured_peaks and r.measured_peaks.tflops > 10 and r.measured_peaks.tbps > 1) then
  io.stderr:write("FAIL: no plausible measured peaks\n") os.exit(1)
end
if r.verdict ~= "ok" then io.stderr:write("FAIL: verdict " .. r.verdict .. ": " .. r.reason .. "\n") os.exit(1) end
print(string.format("PASS: gemm 4096^3 naive: median %.2f ms (CI %.2f..%.2f, %d reps), %.3f TFLOP/s, regs %s, SM %d MHz, %d C, %.0f W, throttle 0x%x",
  r.time_ms, r.ci_ms[1], r.ci_ms[2], r.reps, r.tflops, tostring(r.resources.gemm.registers),
  r.clocks.after.sm_mhz, r.clocks.after.temp_c, r.clocks.after.power_w, r.clocks.after.throttle))
print(string.format("PASS: measured peaks: FMA %.1f TFLOP/s, copy %.2f TB/s; naive gemm at %.2f%% of the measured ceiling",
  r.measured_peaks.tflops, r.measured_peaks.tbps, 100 * r.frac_measured))
