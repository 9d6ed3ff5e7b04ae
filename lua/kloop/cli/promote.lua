-- kloop.cli.promote: `kloop promote ID`: the staged path of a stored candidate, verified
-- -> canary -> promoted (kloop.eval.promote, docs/PROMOTION.md), each step printed as it
-- ends and recorded in the store with its evidence.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local store = require("kloop.store.db")
local util = require("kloop.util")

local M = {}

M.usage = common.usage([[
usage: kloop promote CANDIDATE [--against ID] [--allow-equal] [--db PATH] [--json]

Promotes a stored candidate only on evidence: a fresh worker with a new secret,
hidden sizes drawn now, more input distributions, the property check, the
sanitizers (compute-sanitizer; ASan and UBSan for C tasks) and an interleaved A/B
re-time against the incumbent (--against ID, else the task's last promoted
candidate, else the run's baseline) at the bench size. The candidate must be
proven faster (the ratio's CI above 1) unless --allow-equal. Each step is stored
(kloop show c:ID prints the state; kloop export wants a promoted candidate).
Exit: 0 promoted, 1 refused or failed, 2 bad usage.
]])

function M.main(argv)
  local opts, pos = common.parse("promote", argv, M.usage,
    { ["--against"] = "value", ["--allow-equal"] = "flag", ["--timing-budget"] = "number" })
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("promote", "give one candidate id", M.usage) end
  local id, rc = common.candidate_ref("promote", pos[1], M.usage, "promote takes a candidate id, not a run")
  if not id then return rc end
  local against
  if opts.against then
    against, rc = common.candidate_ref("promote", opts.against, M.usage, "--against takes a candidate id, not a run")
    if not against then return rc end
  end
  local path = opts.db or store.default_path()
  local db, err = store.open(path, { create = false })
  if not db then return common.say_error("promote", err) end
  if db.readonly then db:close() return common.say_error("promote", path .. ": read-only") end
  if against and not db:candidate(against) then
    db:close()
    return common.say_error("promote", "no candidate " .. against .. " (--against)")
  end
  local lines = {}
  local log = opts.json and function(l) lines[#lines + 1] = l end or function(l) print(l) io.stdout:flush() end
  local res, perr = require("kloop.eval.promote").run(db, id, { against = against, allow_equal = opts.allow_equal,
    log = log, timing = opts.timing_budget and { budget = opts.timing_budget } or nil })
  if not res then
    db:close()
    return common.say_error("promote", perr)
  end
  if opts.json then
    local p = db:latest_promotion(id)
    p.log = lines
    print(common.json(p))
  end
  db:close()
  if res.store_error then util.eprintf("kloop promote: the store did not take the outcome: %s\n", res.store_error) end
  return res.state == "promoted" and 0 or 1
end

return M
