-- kloop.cli.runs: `kloop runs`: one line per run in the store.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local util = require("kloop.util")
local store = require("kloop.store.db")

local M = {}

M.usage = common.usage([[
usage: kloop runs [--db PATH] [--json]

One line per run: id, task, strategy, status, candidates (evaluated/ok), the best
verified median time, its speedup over the run's baseline candidate, and when it
started (UTC). Status "stale" is a run still marked running whose writer process on
this machine is gone (it was killed: resume it).
]])

function M.main(argv)
  local opts, pos = common.parse("runs", argv, M.usage)
  if not opts then return pos end
  if #pos > 0 then return args.usage_error("runs", "takes no arguments", M.usage) end
  local db, rc = common.open_db("runs", opts)
  if not db then return rc end
  local runs = db:runs()
  db:close()
  if opts.json then
    for _, r in ipairs(runs) do r.status = common.status_of(r) end
    print(common.json(runs))
    return 0
  end
  if #runs == 0 then
    print("no runs in " .. (opts.db or store.default_path()))
    return 0
  end
  local rows = {}
  for _, r in ipairs(runs) do
    rows[#rows + 1] = { r.id, r.task_name or "-", r.strategy_path and require("kloop.search.loader").display_name(r.strategy_path) or "-",
      common.status_of(r), string.format("%d (%d/%d)", r.n_candidates, r.n_evaluated, r.n_ok), util.fmt_ms(r.best_ms),
      util.fmt_x(r.speedup), util.fmt_when(r.started_at) }
  end
  common.print_table({ "ID", "TASK", "STRATEGY", "STATUS", "CANDIDATES (EVAL/OK)", "BEST", "SPEEDUP", "STARTED (UTC)" }, rows)
  return 0
end

return M
