-- kloop.cli.check: `kloop check TARGET`: verify and time a kernel on the GPU.
local args = require("kloop.cli.args")
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local core = require("kloop.core.ffi")
local util = require("kloop.util")
local cjson = require("cjson")

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

local function fmt_time(ms)
  if ms >= 100 then return string.format("%.1f ms", ms) end
  if ms >= 1 then return string.format("%.3f ms", ms) end
  return string.format("%.2f us", ms * 1e3)
end

function M.print_result(r, name)
  print(string.format("%-10s %s", "candidate", name))
  print(string.format("%-10s %s", "verdict", r.verdict))
  print(string.format("%-10s %s", "reason", r.reason or ""))
  if r.time_ms then
    print(string.format("%-10s %s (95%% CI %s .. %s, min %s, spread %.1f%%, %d reps)", "time",
      fmt_time(r.time_ms), fmt_time(r.ci_ms[1]), fmt_time(r.ci_ms[2]), fmt_time(r.min_ms), 100 * r.spread, r.reps))
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
    print(string.format("%-10s SM %d MHz, memory %d MHz, %d C, %.0f W, throttle reasons 0x%x (after timing)",
      "clocks", ck.sm_mhz, ck.mem_mhz, ck.temp_c, ck.power_w, ck.throttle))
  end
  if r.sandbox then print(string.format("%-10s %s", "sandbox", r.sandbox)) end
  if r.log and r.log ~= "" then print("log:\n" .. r.log) end
end

-- What check and profile share: the options, the task, the candidate, --params and
-- the GPU. cmd: "check" or "profile"; extra: more option kinds; hooks.options(opts)
-- and hooks.task(task, target) may refuse with an exit code (having said why).
-- Returns {opts, task, src, name, defines}, or nil, exit code.
function M.load_target(cmd, argv, usage, extra, hooks)
  hooks = hooks or {}
  local kinds = { ["--candidate"] = "value", ["--json"] = "flag", ["--params"] = "value", ["--budget"] = "number",
    ["--deadline"] = "number", ["--device"] = "number", ["-h"] = "flag", ["--help"] = "flag" }
  for k, v in pairs(extra or {}) do kinds[k] = v end
  local opts, pos = args.parse(argv, kinds)
  if not opts then util.eprintf("kloop %s: %s\n%s", cmd, pos, usage) return nil, 2 end
  if opts.h or opts.help then io.stdout:write(usage) return nil, 0 end
  if #pos ~= 1 then util.eprintf("kloop %s: give one TARGET\n%s", cmd, usage) return nil, 2 end
  local code = hooks.options and hooks.options(opts)
  if code then return nil, code end
  local task, err = taskmod.load(pos[1])
  if not task then util.eprintf("kloop %s: %s\n", cmd, err) return nil, 1 end
  code = hooks.task and hooks.task(task, pos[1])
  if code then return nil, code end
  local src, name = nil, util.basename(task.kernel)
  if opts.candidate then
    src = util.read_file(opts.candidate)
    if not src then util.eprintf("kloop %s: cannot read candidate %s\n", cmd, opts.candidate) return nil, 1 end
    name = opts.candidate
  end
  local defines, derr = args.defines(opts.params)
  if not defines then util.eprintf("kloop %s: --params: %s\n", cmd, derr) return nil, 2 end
  if task.backend == "cuda" then
    local gpu, gerr = core.gpu_probe(opts.device or 0)
    if not gpu then
      util.eprintf("kloop %s: no GPU here (%s); `kloop compile %s` works without one\n", cmd, gerr, pos[1])
      return nil, 1
    end
  end
  return { opts = opts, task = task, src = src, name = name, defines = defines }
end

function M.main(argv)
  local t, code = M.load_target("check", argv, M.usage)
  if not t then return code end
  local opts, task, src, name, defines = t.opts, t.task, t.src, t.name, t.defines
  local ev = eval.new(task, { deadline = opts.deadline, device = opts.device,
    timing = { budget = opts.budget or 2.0 } })
  local r = ev:evaluate(src, { defines = defines, name = util.basename(name) })
  ev:close()
  if r.infrastructure then util.eprintf("kloop check: %s\n", r.reason) return 1 end
  if opts.json then
    r.samples = r.samples or {}
    print(cjson.encode(r))
  else
    M.print_result(r, name)
  end
  return r.verdict == "ok" and 0 or 3
end

return M
