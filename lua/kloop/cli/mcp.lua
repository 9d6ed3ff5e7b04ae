-- kloop.cli.mcp: `kloop mcp TASK`: a Model Context Protocol server on stdin/stdout whose
-- tools are kloop's evaluator and run store over one task (docs/AGENTS.md).
local args = require("kloop.cli.args")
local util = require("kloop.util")
local kloop = require("kloop")
local store = require("kloop.store.db")
local sys = require("kloop.core.sys")
local native = require("kloop.native")
local tools = require("kloop.mcp.tools")
local server = require("kloop.mcp.server")

local M = {}

M.usage = [[
usage: kloop mcp TASK [--db PATH] [--run-name NAME] [--budget SECONDS] [--deadline SECONDS] [--device N]

Serves the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC 2.0) for
an agent (Claude Code, Codex, ...): tools task_info, compile, check, profile, compare,
history, best and promote over TASK, each candidate verified by kloop's evaluator and
recorded in one run of the store (default $KLOOP_DB or kloop.db) with proposer
agent:<client name>. --budget: the default timing budget of a check (1 s). Diagnostics
go to stderr; stdout carries only protocol messages. Ends at end of input (exit 0).
See docs/AGENTS.md.
]]

M.INSTRUCTIONS = [[kloop verifies and times kernel candidates for one task. Start with task_info
(signature, sizes, tolerance, baseline source), then check the baseline (no arguments) and your
candidates (source). A verdict other than ok means the candidate is wrong or was refused; reason
and evidence say why. compare times two candidates interleaved; history and best read this run.]]

-- While a tool runs, SIGTERM and SIGHUP stop it like Ctrl-C (the evaluator is closed and
-- the run ended); between calls they end kloop at once (everything is already stored).
local function call_with_signals(call)
  return function(self, name, a)
    native.signals_run(true)
    local ok, r, err, field = pcall(call, self, name, a)
    native.signals_run(false)
    if not ok then error(r, 0) end
    return r, err, field
  end
end

function M.main(argv)
  local opts, pos = args.parse(argv, { ["--db"] = "value", ["--run-name"] = "value", ["--budget"] = "number",
    ["--deadline"] = "number", ["--device"] = "number", ["-h"] = "flag", ["--help"] = "flag" })
  if not opts then util.eprintf("kloop mcp: %s\n%s", pos, M.usage) return 2 end
  if opts.h or opts.help then io.stdout:write(M.usage) return 0 end
  if #pos ~= 1 then util.eprintf("kloop mcp: give one TASK\n%s", M.usage) return 2 end
  local task, err = kloop.load_task(pos[1])
  if not task then util.eprintf("kloop mcp: %s\n", err) return 1 end
  local db, derr = store.open(opts.db or store.default_path())
  if not db then util.eprintf("kloop mcp: %s\n", derr) return 1 end

  -- stdout is the protocol's: everything else kloop (or a library) prints goes to stderr
  local out, real_print = io.stdout, print
  io.output(io.stderr)
  io.stdout = io.stderr
  _G.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    io.stderr:write(table.concat(parts, "\t"), "\n")
  end
  local function log(msg) io.stderr:write(msg, "\n") end

  local session = tools.new({ task = task, task_path = pos[1], db = db, run_name = opts.run_name, log = log,
    evaluator_opts = { device = opts.device, deadline = opts.deadline, timing = { budget = opts.budget or 1.0 } } })
  session.call = call_with_signals(session.call)
  local srv = server.new({ tools = session, log = log, version = kloop.version(), instructions = M.INSTRUCTIONS,
    write = function(line)
      out:write(line, "\n")
      out:flush()
    end })
  log(string.format("kloop mcp: serving %s (%s) on stdio; store %s", task.name, task.backend,
    opts.db or store.default_path()))
  local ok, e = xpcall(srv.serve, debug.traceback, srv, function() return io.stdin:read("*l") end)
  local code = 0
  if ok then
    session:close("done", "the client closed the connection")
  elseif sys.is_interrupt(e) then
    local sig = sys.interrupt_signal()
    session:close("interrupted", sig == 15 and "SIGTERM" or sig == 1 and "SIGHUP" or "Ctrl-C")
    code = 128 + (sig ~= 0 and sig or 2)
  else
    log("kloop mcp: " .. tostring(e))
    session:close("failed", tostring(e):match("^[^\n]*"))
    code = 1
  end
  db:close()
  io.stdout, _G.print = out, real_print
  io.output(out)
  return code
end

return M
