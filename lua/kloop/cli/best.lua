-- kloop.cli.best: `kloop best [RUN]`: the best verified candidate, in a run or in the whole store.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local util = require("kloop.util")

local M = {}

M.usage = common.usage([[
usage: kloop best [RUN] [--db PATH] [--json]

The best verified candidate (verdict ok, a full evaluation) of RUN: the last one the
run crowned, which beat the best before it in an interleaved A/B (a run stored before
crowning by A/B: the lowest median). Without RUN, the fastest of every run's best.
]])

function M.main(argv)
  local opts, pos = common.parse("best", argv, M.usage)
  if not opts then return pos end
  if #pos > 1 then return args.usage_error("best", "give at most one RUN", M.usage) end
  local run_id
  if pos[1] then
    local kind, id = common.parse_ref(pos[1], "run")
    if not kind then return args.usage_error("best", id, M.usage) end
    if kind ~= "run" then return args.usage_error("best", "RUN is a run id, not a candidate", M.usage) end
    run_id = id
  end
  local db, rc = common.open_db("best", opts)
  if not db then return rc end
  local c, err = db:best(run_id)
  local run = c and db:run(c.run_id)
  local promotion_line, promotion
  if c then promotion_line, promotion = common.promotion_state(db, c.id) end
  db:close()
  if not c then return common.say_error("best", err) end
  local speed = run and common.speedup(run, c.evaluation)
  if opts.json then
    c.speedup = speed or nil
    c.promotion, c.promotion_state = promotion, promotion_line
    print(common.json(c))
    return 0
  end
  print(string.format("c:%d  run %d  %s  %s  %s%s", c.id, c.run_id, run and run.task_name or "?", c.proposer,
    util.fmt_ms(c.evaluation.median_ms), speed and ("  " .. util.fmt_x(speed) .. " the baseline") or ""))
  common.liner("  ")("promotion", promotion_line)
  common.print_evaluation(c.evaluation, "  ")
  return 0
end

return M
