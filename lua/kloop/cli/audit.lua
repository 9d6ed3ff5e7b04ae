-- kloop.cli.audit: `kloop audit [RUN...] [--json]`: the process audit's tables in the terminal.
local util = require("kloop.util")
local store = require("kloop.store.db")
local report = require("kloop.cli.report")

local M = {}

M.usage = [[
usage: kloop audit [RUN...] [--json] [--db PATH]

The tables of `kloop report` as aligned text for one or more runs (default: the
latest): per model and prompt version (proposals, verdicts, verified improvements,
tokens, cost, latency), the failure taxonomy, the lineage of the best candidate, the
top candidates, the provenance and, across several runs, prompt and model drift.
Colour only on a terminal and never when NO_COLOR is set.
  --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
  --json        one JSON document on stdout (everything the tables show, raw)
Exit: 0 ok, 1 error (unknown run, missing or unreadable database), 2 bad usage.]]

function M.main(argv)
  local opts, ids = report.parse("audit", argv, { ["--db"] = "value", ["--json"] = "flag",
    ["-h"] = "flag", ["--help"] = "flag" }, M.usage)
  if not opts then return ids end
  local d, err = require("kloop.report.build").gather(opts.db or store.default_path(), ids)
  if not d then
    util.eprintf("kloop audit: %s\n", err)
    return 1
  end
  if d.warning then util.eprintf("kloop audit: warning: %s\n", d.warning) end
  if opts.json then
    print(store.encode(d))
    return 0
  end
  local term = require("kloop.report.terminal")
  io.stdout:write(term.render(d, { color = term.use_color(1) }))
  return 0
end

return M
