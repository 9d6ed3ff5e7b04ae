-- kloop.cli.replay: `kloop replay ID`: re-evaluate a stored candidate on this machine and
-- compare verdict and median time with its stored evaluation (nothing is written).
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local target = require("kloop.cli.target")
local util = require("kloop.util")

local M = {}

M.usage = common.usage([[
usage: kloop replay CANDIDATE [--task PATH] [--budget SECONDS] [--device N] [--db PATH] [--json]

Re-evaluates a stored candidate on this machine with the task stored on its run
(or PATH) and compares verdict and median time with the stored evaluation. Nothing
is written to the store. Exit 0 same verdict and a median inside the stored CI, 3 a
different verdict, 1 the time moved (the new median outside the stored CI) or an
error (no GPU here, task not found), 2 bad usage.
]])

-- Did the time move? The new median outside the stored median's CI: a text saying so, or nil.
function M.time_moved(old, r)
  local ci = old and old.ci_ms
  if not (r.time_ms and old.median_ms and type(ci) == "table" and ci[1] and ci[2]) then return nil end
  if r.time_ms >= ci[1] and r.time_ms <= ci[2] then return nil end
  return string.format("time moved: %s the stored median, outside the stored CI [%s, %s]",
    util.fmt_x(r.time_ms / old.median_ms), util.fmt_ms(ci[1]), util.fmt_ms(ci[2]))
end

-- "GPU arch" of an evaluation, or "-".
local function where(e)
  local w = table.concat({ e.gpu or "", e.arch or "" }, " "):gsub("^%s+", ""):gsub("%s+$", "")
  return w ~= "" and w or "-"
end

function M.main(argv)
  local opts, pos = common.parse("replay", argv, M.usage, target.options({ ["--task"] = "value" }))
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("replay", "give one candidate id", M.usage) end
  local c, run = common.stored_candidate("replay", opts, pos[1], M.usage, "replay takes a candidate id")
  if not c then return run end
  local task_path = opts.task or run.task_path
  if not task_path then
    return common.say_error("replay", string.format("run %d has no task path; give --task PATH", run.id))
  end
  local task, rc = target.load_task("replay", task_path,
    not opts.task and " (run it from the folder the run started in, or give --task PATH)" or nil)
  if not task then return rc end
  rc = target.need_gpu("replay", task, opts, string.format("the stored evaluation is in `kloop show c:%d`", c.id))
  if rc then return rc end
  local r
  r, rc = target.evaluate("replay", task, opts, c.source,
    { defines = c.params, name = "c" .. c.id .. "." .. (task.backend == "host" and "c" or "cu") })
  if not r then return rc end
  local old = c.evaluation
  local same = old and old.verdict == r.verdict
  local ratio = old and old.median_ms and r.time_ms and r.time_ms / old.median_ms
  local moved = same and M.time_moved(old, r) or nil
  if opts.json then
    r.samples = r.samples or {}
    print(common.json({ candidate = c.id, stored = old and { verdict = old.verdict, median_ms = old.median_ms,
      ci_ms = old.ci_ms, gpu = old.gpu, arch = old.arch } or nil, now = r, same_verdict = same or false, time_ratio = ratio,
      time_moved = moved ~= nil }))
  else
    local row = "%-9s%-14s%-12s%s"
    print(string.format(row, "", "verdict", "median", "gpu"))
    if old then
      print(string.format(row, "stored", old.verdict, util.fmt_ms(old.median_ms), where(old)))
    else
      print("stored   (never evaluated)")
    end
    print(string.format(row, "now", r.verdict, util.fmt_ms(r.time_ms), where(r)))
    if ratio then print(string.format("time now / stored = %.3f", ratio)) end
    if not same and old then print("verdict changed: " .. (r.reason or "")) end
    if moved then print(moved) end
  end
  if old and not same then return 3 end
  if moved then return 1 end
  return 0
end

return M
