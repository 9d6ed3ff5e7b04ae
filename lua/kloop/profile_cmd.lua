-- kloop.profile_cmd: `kloop profile TARGET`: verify and time a kernel, then profile it
-- with CUPTI (kernel activity, hardware metrics) and print the roofline and hints.
local args = require("kloop.args")
local taskmod = require("kloop.task")
local eval = require("kloop.eval")
local core = require("kloop.core")
local util = require("kloop.util")
local prof = require("kloop.profile")
local check = require("kloop.check_cmd")
local cjson = require("cjson")

local M = {}

M.usage = [[
usage: kloop profile TARGET [--candidate FILE] [--params K=V,...] [--metrics LIST]
                            [--json] [--budget SECONDS] [--deadline SECONDS] [--device N]

Evaluates the task's kernel (or FILE) as `kloop check` does (verified, timed), then
profiles it at the bench size, outside the timing: CUPTI kernel records against the
event timer, and hardware metrics from the Range Profiler (each kernel replayed once
per pass). Prints the roofline position (cost model against the measured ceilings),
the metrics and plain-language hints.
--metrics a,b,c collects just those (names as ncu spells them, e.g.
dram__bytes_read.sum); --metrics +a,b adds them to the defaults:
]] .. "  " .. table.concat(prof.DEFAULT, "\n  ") .. "\n" .. [[
and, for the hints:
]] .. "  " .. table.concat(prof.SUPPORT, "\n  ") .. "\n" .. [[
Where the GPU's counters cannot be read, says so and prints the rest.
Exit: 0 profiled, 3 the kernel failed verification, 1 error, 2 bad usage.
]]

function M.main(argv)
  local opts, pos = args.parse(argv, { ["--candidate"] = "value", ["--json"] = "flag", ["--params"] = "value",
    ["--metrics"] = "value", ["--budget"] = "number", ["--deadline"] = "number", ["--device"] = "number",
    ["-h"] = "flag", ["--help"] = "flag" })
  if not opts then util.eprintf("kloop profile: %s\n%s", pos, M.usage) return 2 end
  if opts.h or opts.help then io.stdout:write(M.usage) return 0 end
  if #pos ~= 1 then util.eprintf("kloop profile: give one TARGET\n%s", M.usage) return 2 end
  local names, merr = prof.metric_list(opts.metrics)
  if not names then util.eprintf("kloop profile: --%s\n", merr) return 2 end
  local task, err = taskmod.load(pos[1])
  if not task then util.eprintf("kloop profile: %s\n", err) return 1 end
  if task.backend ~= "cuda" then
    util.eprintf("kloop profile: %s is a %s task; profiling needs a CUDA task (kloop check works for both)\n",
      pos[1], task.backend)
    return 1
  end
  local src, name = nil, util.basename(task.kernel)
  if opts.candidate then
    src = util.read_file(opts.candidate)
    if not src then util.eprintf("kloop profile: cannot read candidate %s\n", opts.candidate) return 1 end
    name = opts.candidate
  end
  local defines, derr = args.defines(opts.params)
  if not defines then util.eprintf("kloop profile: --params: %s\n", derr) return 2 end
  local gpu, gerr = core.gpu_probe(opts.device or 0)
  if not gpu then
    util.eprintf("kloop profile: no GPU here (%s); `kloop compile %s` works without one\n", gerr, pos[1])
    return 1
  end
  local ev = eval.new(task, { deadline = opts.deadline, device = opts.device, timing = { budget = opts.budget or 1.0 } })
  local r = ev:evaluate(src, { defines = defines, name = util.basename(name) })
  if r.infrastructure then ev:close() util.eprintf("kloop profile: %s\n", r.reason) return 1 end
  if r.verdict ~= "ok" then
    ev:close()
    if opts.json then print(cjson.encode({ evaluation = r })) else check.print_result(r, name) end
    return 3
  end
  local p = ev:profile(src, { defines = defines, name = util.basename(name), metrics = opts.metrics, time_ms = r.time_ms,
    verified = true })
  ev:close()
  if p.infrastructure then
    util.eprintf("kloop profile: %s\n", p.reason)
    return p.usage and 2 or 1
  end
  if p.verdict ~= "ok" then
    -- verified and timed a moment ago, failed under the profiler: say what happened
    if opts.json then print(cjson.encode({ evaluation = r, profile_run = p })) else
      check.print_result(r, name)
      print(string.format("%-10s %s: %s", "profile", p.verdict, tostring(p.reason)))
    end
    return 1
  end
  r.profile = p.profile
  if opts.json then
    r.samples = r.samples or {}
    print(cjson.encode(r))
    return 0
  end
  check.print_result(r, name)
  print(prof.text(p.profile, p.profile.metric_names))
  if p.profile.warning then print("warning: " .. p.profile.warning) end
  return 0
end

return M
