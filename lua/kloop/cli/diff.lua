-- kloop.cli.diff: `kloop diff A B`: unified diff of two candidates' sources.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local textdiff = require("kloop.textdiff")

local M = {}

M.usage = common.usage([[
usage: kloop diff A B [--db PATH] [--json] [-U LINES]

Unified diff of the sources of candidates A and B (ids, or c:ID), LINES lines of
context (default 3). Exit 0 whether or not they differ.
]])

function M.main(argv)
  local opts, pos = common.parse("diff", argv, M.usage, { ["-U"] = "uint", ["--unified"] = "uint" })
  if not opts then return pos end
  if #pos ~= 2 then return args.usage_error("diff", "give two candidate ids", M.usage) end
  local ids = {}
  for i = 1, 2 do
    local id, rc = common.candidate_ref("diff", pos[i], M.usage, "diff compares candidates, not runs")
    if not id then return rc end
    ids[i] = id
  end
  local db, rc = common.open_db("diff", opts)
  if not db then return rc end
  local a, aerr = db:candidate(ids[1])
  local b, berr = db:candidate(ids[2])
  db:close()
  if not a then return common.say_error("diff", aerr) end
  if not b then return common.say_error("diff", berr) end
  local body, removed, added = textdiff.unified(a.source, b.source, opts.U or opts.unified or 3)
  local pa, pb = common.params_text(a.params), common.params_text(b.params)
  if opts.json then
    print(common.json({ a = a.id, b = b.id, removed = removed, added = added, diff = body,
      params_a = a.params, params_b = b.params }))
    return 0
  end
  if body == "" then
    print(string.format("c:%d and c:%d have the same source", a.id, b.id))
    if (pa or "") ~= (pb or "") then print(string.format("parameters differ: %s vs %s", pa or "none", pb or "none")) end
    return 0
  end
  local function label(c, p)
    return string.format("c:%d (run %d, %s%s)", c.id, c.run_id, c.proposer, p and (", " .. p) or "")
  end
  io.stdout:write("--- ", label(a, pa), "\n", "+++ ", label(b, pb), "\n", body)
  return 0
end

return M
