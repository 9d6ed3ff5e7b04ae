-- kloop.cli.check: `kloop check TARGET`: verify and time a kernel on the GPU.
local target = require("kloop.cli.target")
local util = require("kloop.util")

local M = {}

M.usage = [[
usage: kloop check TARGET [--candidate FILE] [--params K=V,...] [--json]
                          [--budget SECONDS] [--deadline SECONDS] [--device N]

Evaluates the task's kernel (or FILE) on the GPU: compiles it, verifies it on every
check size and the bench size with two input distributions and fresh seeds (outputs
poisoned, inputs checksummed, a determinism run), times it at the bench size (cold
L2, inputs rotated, timed outputs re-verified) and checks the physical floor.
--budget bounds the timing loop (default 2 s), --deadline one evaluation (default
120 s). Exit: 0 verdict ok, 3 any other verdict, 1 error, 2 bad usage.
]]

-- The result of one evaluation as text (check, and profile before its counters).
function M.print_result(r, name)
  local fmt_ms = util.fmt_ms
  print(string.format("%-10s %s", "candidate", name))
  print(string.format("%-10s %s", "verdict", r.verdict))
  print(string.format("%-10s %s", "reason", r.reason or ""))
  if r.time_ms then
    print(string.format("%-10s %s (95%% CI %s .. %s, min %s, spread %.1f%%, %d reps)", "time",
      fmt_ms(r.time_ms), fmt_ms(r.ci_ms[1]), fmt_ms(r.ci_ms[2]), fmt_ms(r.min_ms), 100 * r.spread, r.reps))
    if r.frac_peak then
      print(string.format("%-10s %.2f TFLOP/s, %.1f GB/s, %.1f%% of the %s ceiling", "rate",
        r.tflops, r.gbps, 100 * r.frac_peak, r.bound))
      if r.frac_measured then
        print(string.format("%-10s %.1f%% of the measured ceiling (FMA %.1f TFLOP/s, copy %.2f TB/s)", "roofline",
          100 * r.frac_measured, r.measured_peaks.tflops, r.measured_peaks.tbps))
      end
    else
      print(string.format("%-10s %.2f GFLOP/s, %.1f GB/s", "rate", r.tflops * 1e3, r.gbps))
    end
  end
  for _, entry in ipairs(util.sorted_keys(r.resources or {})) do
    local x = r.resources[entry]
    if x.registers == nil then break end -- host kernels report no resources
    print(string.format("%-10s %s: %s registers, %s B static + %s B dynamic smem, %s B local, spills %s/%s B",
      "resources", entry, tostring(x.registers), tostring(x.static_smem), tostring(x.dynamic_smem or 0),
      tostring(x.local_bytes or x.stack_bytes), tostring(x.spill_stores), tostring(x.spill_loads)))
  end
  local ck = r.clocks and r.clocks.after
  if ck then
    print(string.format("%-10s SM %d MHz, memory %d MHz, %d C, %.0f W, throttle reasons 0x%x (during the last timed repetition)",
      "clocks", ck.sm_mhz, ck.mem_mhz, ck.temp_c, ck.power_w, ck.throttle))
  end
  if r.sandbox then print(string.format("%-10s %s", "sandbox", r.sandbox)) end
  if r.log and r.log ~= "" then print("log:\n" .. r.log) end
end

function M.main(argv)
  local t, code = target.load("check", argv, M.usage)
  if not t then return code end
  local r, rc = target.evaluate("check", t.task, t.opts, t.src, { defines = t.defines, name = util.basename(t.name) })
  if not r then return rc end
  if t.opts.json then print(target.result_json(r)) else M.print_result(r, t.name) end
  return r.verdict == "ok" and 0 or 3
end

return M
