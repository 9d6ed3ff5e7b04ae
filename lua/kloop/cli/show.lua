-- kloop.cli.show: `kloop show ID`: a run (provenance, one line per candidate), or a
-- candidate with its lineage and latest evaluation.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local util = require("kloop.util")

local M = {}

M.usage = common.usage([[
usage: kloop show RUN [--db PATH] [--json]
       kloop show c:CANDIDATE [--db PATH] [--json]
       kloop show --candidate CANDIDATE [--db PATH] [--json]

A run (its provenance and one line per candidate), or a candidate (provenance,
lineage back to its roots, and its latest evaluation). RUN may be written r:RUN.
]])

local fmt_ms, fmt_when = util.fmt_ms, util.fmt_when

local function show_run(db, id, opts)
  local run, err = db:run(id)
  if not run then return common.say_error("show", err) end
  local cands = assert(db:candidates(id))
  if opts.json then
    run.status = common.status_of(run)
    for _, c in ipairs(cands) do c.source = nil end -- `kloop show c:ID --json` has it
    run.candidates = cands
    print(common.json(run))
    return 0
  end
  print(string.format("run %d: %s (%s)", run.id, run.task_name or "?", run.task_path or "no task path"))
  local line = common.liner()
  line("status", common.status_of(run) .. (run.stop_reason and (": " .. run.stop_reason) or ""))
  line("started", fmt_when(run.started_at) .. (run.ended_at and ("  ended " .. fmt_when(run.ended_at)) or ""))
  line("strategy", run.strategy_path and (run.strategy_path .. "  hash " .. (run.strategy_hash or "-")))
  line("machine", string.format("%s (pid %s)", run.hostname or "?", tostring(run.pid or "?")))
  line("gpu", run.gpu_name and string.format("%s %s", run.gpu_name, run.gpu_arch or ""))
  line("versions", string.format("kloop %s, driver %s, CUDA %s, NVRTC %s", run.kloop_version or "-",
    run.driver_version or "-", run.cuda_version or "-", run.nvrtc_version or "-"))
  line("seed", run.seed and tostring(run.seed))
  line("options", run.options ~= nil and common.json(run.options) or nil)
  line("budget", run.budget ~= nil and common.json(run.budget) or nil)
  line("candidates", string.format("%d, %d evaluated, %d ok", run.n_candidates, run.n_evaluated, run.n_ok))
  local best = db:best(id)
  if best then
    line("best", string.format("c:%d %s%s", best.id, fmt_ms(best.evaluation.median_ms),
      run.speedup and (" (" .. util.fmt_x(run.speedup) .. " the baseline)") or ""))
  end
  local files = db.run_files and db:run_files(id)
  if type(files) == "table" and #files > 0 then
    print("files:")
    for _, f in ipairs(files) do
      print(string.format("  %-7s %s  %s  hash %s", tostring(f.role), tostring(f.module), tostring(f.path), tostring(f.hash)))
    end
  end
  if #cands > 0 then
    print("")
    local rows = {}
    for _, c in ipairs(cands) do
      local e = c.evaluation or {}
      local parents = common.parent_refs(c.parents)
      rows[#rows + 1] = { "c:" .. c.id, c.proposer, #parents > 0 and table.concat(parents, ",") or "-",
        common.params_text(c.params) or "-",
        -- a screened result is no full evaluation (docs/TASKS.md, "Stages"): said so
        e.verdict and (e.verdict .. (e.stage == "screened" and " (screened)" or "")) or "(not evaluated)",
        fmt_ms(e.median_ms), util.fmt_x(common.speedup(run, e)) }
    end
    common.print_table({ "CANDIDATE", "PROPOSER", "PARENTS", "PARAMS", "VERDICT", "MEDIAN", "SPEEDUP" }, rows)
  end
  return 0
end

local function show_candidate(db, id, opts)
  local c, err = db:candidate(id)
  if not c then return common.say_error("show", err) end
  local lineage = assert(db:lineage(id))
  local run = db:run(c.run_id)
  local promotion_line, promotion = common.promotion_state(db, id)
  if opts.json then
    c.lineage = lineage
    c.promotion = promotion
    c.promotion_state = promotion_line
    print(common.json(c))
    return 0
  end
  local line = common.liner()
  print(string.format("candidate %d%s (run %d, %s)", c.id, c.name and (" " .. c.name) or "", c.run_id,
    run and run.task_name or "?"))
  line("proposer", table.concat(common.proposed_by(c), ", "))
  line("sampling", c.sampling ~= nil and common.json(c.sampling) or nil)
  if c.tokens_in or c.tokens_out or c.cost_usd then
    line("tokens", string.format("%s in, %s out, $%.4f", tostring(c.tokens_in or 0), tostring(c.tokens_out or 0),
      c.cost_usd or 0))
  end
  line("params", common.params_text(c.params))
  line("plan", c.launch_plan ~= nil and common.json(c.launch_plan) or nil)
  local nlines = select(2, c.source:gsub("\n", "")) + (c.source:sub(-1) == "\n" and 0 or 1)
  line("source", string.format("%d lines, hash %s", nlines, c.source_hash))
  line("note", c.note)
  line("created", fmt_when(c.created_at))
  line("promotion", promotion_line)
  print("lineage (the candidate, then its ancestors by generation):")
  local rows = {}
  for _, a in ipairs(lineage) do
    local parents = common.parent_refs(a.parents)
    rows[#rows + 1] = { "  " .. a.depth, "c:" .. a.id, a.proposer, a.model or "-", a.verdict or "(not evaluated)",
      fmt_ms(a.median_ms), #parents > 0 and table.concat(parents, ",") or "(root)" }
  end
  common.print_table({ "  GEN", "CANDIDATE", "PROPOSER", "MODEL", "VERDICT", "MEDIAN", "PARENTS" }, rows)
  print("evaluation:")
  common.print_evaluation(c.evaluation, "  ")
  if #c.evaluations > 1 then print(string.format("  (%d evaluations; the latest is shown)", #c.evaluations)) end
  return 0
end

function M.main(argv)
  local opts, pos = common.parse("show", argv, M.usage, { ["--candidate"] = "value" })
  if not opts then return pos end
  local kind, id
  if opts.candidate then
    if #pos > 0 then return args.usage_error("show", "give either RUN or --candidate ID", M.usage) end
    kind, id = common.parse_ref(opts.candidate, "candidate")
    if kind == "run" then return args.usage_error("show", "--candidate takes a candidate id", M.usage) end
  else
    if #pos ~= 1 then return args.usage_error("show", "give one id", M.usage) end
    kind, id = common.parse_ref(pos[1], "run")
  end
  if not kind then return args.usage_error("show", id, M.usage) end
  local db, rc = common.open_db("show", opts)
  if not db then return rc end
  local r = kind == "run" and show_run(db, id, opts) or show_candidate(db, id, opts)
  db:close()
  return r
end

return M
