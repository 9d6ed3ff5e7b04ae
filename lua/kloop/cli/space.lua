-- kloop.cli.space: `kloop space TASK` (also `kloop tune TASK --space`): the tune space, counted, not run.
local args = require("kloop.cli.args")
local taskmod = require("kloop.eval.task")
local tune = require("kloop.search.tune")
local util = require("kloop.util")
local cjson = require("cjson")

local M = {}

M.usage = [[
usage: kloop space TARGET [--implicit] [--json]
       kloop tune TARGET --space [--implicit] [--json]

Prints the tune strategy's parameter space of a task without evaluating anything (no
GPU needed): each parameter and its values, the number of points (raw: the product of
the value counts) and how many of them the task's constraint accepts (valid). A task
without params is tuned over kloop's implicit parameters, listed the same way;
--implicit adds them to declared ones. Exit: 0 printed, 1 error, 2 bad usage.
]]

-- Enumerating a space larger than this only to count it would take too long.
M.count_limit = 2^22

function M.main(argv)
  local spec = { ["--json"] = "flag", ["--implicit"] = "flag", ["--space"] = "flag" }
  local opts, pos = args.command("space", argv, spec, M.usage)
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("space", "give one TARGET", M.usage) end
  local task, err = taskmod.load(pos[1])
  if not task then util.eprintf("kloop space: %s\n", err) return 1 end
  local space = tune.space(task, opts.implicit)
  local valid
  if space.size == 0 then valid = 0
  elseif space.size <= M.count_limit then valid = #tune.all(space) end
  local params = {}
  for i, n in ipairs(space.names) do
    local vals = {}
    for j, v in ipairs(space.values[n]) do vals[j] = v end
    params[i] = { name = n, values = vals }
  end
  if opts.json then
    print(cjson.encode({ task = task.name, raw = space.size, valid = valid or cjson.null,
      constraint = space.constraint ~= nil, implicit = space.implicit or false, params = params }))
    return 0
  end
  print(string.format("%s (%s): %d parameter%s%s", task.name, task.file, #params, #params == 1 and "" or "s",
    space.implicit and " (kloop's implicit ones: the task declares none)" or ""))
  for _, p in ipairs(params) do
    local vals = {}
    for j, v in ipairs(p.values) do vals[j] = tostring(v) end
    print(string.format("  %s = {%s}", p.name, table.concat(vals, ", ")))
  end
  local vtext = valid and tostring(valid) or string.format("not counted (more than %d raw points)", M.count_limit)
  print(string.format("space: %d raw, %s valid%s", space.size, vtext,
    space.constraint and " (after the constraint)" or " (no constraint)"))
  return 0
end

return M
