-- kloop.cli.report: `kloop report [RUN...] [-o FILE.html]`: the process audit as one self-contained HTML page.
local args = require("kloop.cli.args")
local util = require("kloop.util")
local store = require("kloop.store.db")

local M = {}

M.usage = [[
usage: kloop report [RUN...] [-o FILE.html] [--db PATH]

Writes the process audit of one or more runs (default: the latest) as one HTML file
(default ./kloop-report.html; -o - writes it to stdout): best-so-far time and speedup
against candidates evaluated, wall time, tokens and cost; per model and prompt
version the proposals, verdict shares, verified improvements, tokens, cost and
latency; the failure taxonomy; the lineage of the best candidate and the top
candidates; the provenance; and across several runs the drift of prompt versions and
models. The page needs no network and no JavaScript (docs/REPORT.md).
  --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
  -o FILE       the output file
Exit: 0 written, 1 error (unknown run, missing or unreadable database, unwritable file), 2 bad usage.]]

-- "3" or "r:3" -> 3; nil, msg otherwise. Shared with kloop.cli.audit.
function M.run_ids(pos)
  local ids = {}
  for _, s in ipairs(pos) do
    local n = s:match("^r:(%d+)$") or s:match("^run:(%d+)$") or s:match("^(%d+)$")
    if not n then return nil, string.format("'%s' is not a run id (use N or r:N)", s) end
    ids[#ids + 1] = tonumber(n)
  end
  return ids
end

-- Parses argv for report and audit: opts, run ids; or nil, exit code after saying why.
function M.parse(cmd, argv, spec, usage)
  local opts, pos = args.command(cmd, argv, spec, usage .. "\n")
  if not opts then return nil, pos end
  local ids, err = M.run_ids(pos)
  if not ids then return nil, args.usage_error(cmd, err, usage .. "\n") end
  return opts, ids
end

function M.main(argv)
  local opts, ids = M.parse("report", argv, { ["--db"] = "value", ["-o"] = "value", ["--output"] = "value",
    ["-h"] = "flag", ["--help"] = "flag" }, M.usage)
  if not opts then return ids end
  local out = opts.o or opts.output or "kloop-report.html"
  local build = require("kloop.report.build")
  local db_path = opts.db or store.default_path()
  local text, d = build.render(db_path, ids)
  if not text then
    util.eprintf("kloop report: %s\n", d)
    return 1
  end
  if d.warning then util.eprintf("kloop report: warning: %s\n", d.warning) end
  if out == "-" then
    io.stdout:write(text)
    return 0
  end
  local ok, err = build.replace_file(out, text)
  if not ok then
    util.eprintf("kloop report: %s\n", err)
    return 1
  end
  local runs = {}
  for _, r in ipairs(d.runs) do runs[#runs + 1] = tostring(r.run.id) end
  print(string.format("wrote %s (run%s %s)", out, #runs > 1 and "s" or "", table.concat(runs, ", ")))
  return 0
end

return M
