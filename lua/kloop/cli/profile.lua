-- kloop.cli.profile: `kloop profile TARGET`: verify and time a kernel, then profile it
-- with CUPTI (kernel activity, hardware metrics) and print the roofline and hints.
local target = require("kloop.cli.target")
local util = require("kloop.util")
local prof = require("kloop.eval.profile")
local check = require("kloop.cli.check")
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
  local t, code = target.load("profile", argv, M.usage, { ["--metrics"] = "value" }, {
    options = function(opts)
      local _, merr = prof.metric_list(opts.metrics)
      if merr then util.eprintf("kloop profile: --%s\n", merr) return 2 end
    end,
    task = function(task, path)
      if task.backend ~= "cuda" then
        util.eprintf("kloop profile: %s is a %s task; profiling needs a CUDA task (kloop check works for both)\n",
          path, task.backend)
        return 1
      end
    end,
  })
  if not t then return code end
  local opts, task, src, name, defines = t.opts, t.task, t.src, t.name, t.defines
  local ev = target.evaluator(task, opts, 1.0)
  local r, p = ev:evaluate_and_profile(src, { defines = defines, name = util.basename(name), metrics = opts.metrics })
  ev:close()
  if r.infrastructure then util.eprintf("kloop profile: %s\n", r.reason) return 1 end
  if r.verdict ~= "ok" then
    if opts.json then print(cjson.encode({ evaluation = r })) else check.print_result(r, name) end
    return 3
  end
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
  if opts.json then print(target.result_json(r)) return 0 end
  check.print_result(r, name)
  print(prof.text(p.profile, p.profile.metric_names))
  if p.profile.warning then print("warning: " .. p.profile.warning) end
  return 0
end

return M
