-- kloop.cli.store_cmd: the commands that read the run store: runs, show, best, diff, export, replay.
local args = require("kloop.cli.args")
local util = require("kloop.util")
local store = require("kloop.store.db")
local cjson = require("cjson")

local M = {}

local COMMON = [[
common options:
  --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
  --json        one JSON document on stdout, for scripts
Exit: 0 ok, 1 error (unknown id, missing or unreadable database), 2 bad usage.]]

M.usage = {
  runs = [[
usage: kloop runs [--db PATH] [--json]

One line per run: id, task, strategy, status, candidates (evaluated/ok), the best
verified median time, its speedup over the run's baseline candidate, and when it
started (UTC). Status "stale" is a run still marked running whose writer process on
this machine is gone (it was killed: resume it).
]],
  show = [[
usage: kloop show RUN [--db PATH] [--json]
       kloop show c:CANDIDATE [--db PATH] [--json]
       kloop show --candidate CANDIDATE [--db PATH] [--json]

A run (its provenance and one line per candidate), or a candidate (provenance,
lineage back to its roots, and its latest evaluation). RUN may be written r:RUN.
]],
  best = [[
usage: kloop best [RUN] [--db PATH] [--json]

The verified candidate (verdict ok) with the lowest median time, in RUN or in every
run of the store.
]],
  diff = [[
usage: kloop diff A B [--db PATH] [--json] [-U LINES]

Unified diff of the sources of candidates A and B (ids, or c:ID), LINES lines of
context (default 3). Exit 0 whether or not they differ.
]],
  export = [[
usage: kloop export CANDIDATE -o DIR [--db PATH] [--json]

Writes into DIR: kernel.cu (or .c) with a provenance header (and the candidate's
parameters as #defines), launch_plan.h (the launch plan at the task's bench size
as C constants, and the plan as JSON), and provenance.json.
]],
  replay = [[
usage: kloop replay CANDIDATE [--task PATH] [--budget SECONDS] [--device N] [--db PATH] [--json]

Re-evaluates a stored candidate on this machine with the task stored on its run
(or PATH) and compares verdict and median time with the stored evaluation. Nothing
is written to the store. Exit 0 same verdict, 3 a different verdict, 1 error (no
GPU here, task not found), 2 bad usage.
]],
}

---------------------------------------------------------------------------
-- JSON output is always valid UTF-8. Stored text may hold any bytes (a model's reply,
-- a compile log); each byte of an invalid UTF-8 sequence is written as the character
-- U+0080..U+00FF of the same number (the byte read as Latin-1), so nothing is dropped
-- and every decoder accepts the document (docs/STORE.md, "JSON output").

local byte, char = string.byte, string.char

-- Length of the valid UTF-8 sequence starting at s[i], or nil.
local function seq_len(s, i, c)
  local c2, c3, c4 = byte(s, i + 1, i + 3)
  local function cont(x) return x and x >= 0x80 and x <= 0xBF end
  if c >= 0xC2 and c <= 0xDF then return cont(c2) and 2 or nil end
  if c >= 0xE0 and c <= 0xEF then
    local lo, hi = 0x80, 0xBF
    if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F end -- no overlongs, no surrogates
    return (c2 and c2 >= lo and c2 <= hi and cont(c3)) and 3 or nil
  end
  if c >= 0xF0 and c <= 0xF4 then
    local lo, hi = 0x80, 0xBF
    if c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end -- nothing above U+10FFFF
    return (c2 and c2 >= lo and c2 <= hi and cont(c3) and cont(c4)) and 4 or nil
  end
  return nil
end

-- s with every byte of an invalid UTF-8 sequence replaced by U+00XX; s itself when valid.
function M.utf8_safe_string(s)
  if not s:find("[\128-\255]") then return s end
  local out, n, i, from = {}, #s, 1, 1
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len = seq_len(s, i, c)
      if len then
        i = i + len
      else
        if from < i then out[#out + 1] = s:sub(from, i - 1) end
        out[#out + 1] = c < 0xC0 and ("\194" .. char(c)) or ("\195" .. char(c - 0x40))
        i = i + 1
        from = i
      end
    end
  end
  if from == 1 then return s end
  if from <= n then out[#out + 1] = s:sub(from) end
  return table.concat(out)
end

-- A copy of v (tables, keys and strings) that is valid UTF-8 throughout.
function M.utf8_safe(v, depth)
  depth = depth or 0
  if type(v) == "string" then return M.utf8_safe_string(v) end
  if type(v) ~= "table" or depth > 64 then return v end
  local out = {}
  for k, x in pairs(v) do
    out[type(k) == "string" and M.utf8_safe_string(k) or k] = M.utf8_safe(x, depth + 1)
  end
  return setmetatable(out, getmetatable(v))
end

local function json(v) return store.encode(M.utf8_safe(v)) end

local function say_error(cmd, msg)
  util.eprintf("kloop %s: %s\n", cmd, msg)
  return 1
end

local function usage_error(cmd, msg)
  util.eprintf("kloop %s: %s\n%s\n%s\n", cmd, msg, M.usage[cmd], COMMON)
  return 2
end

-- "12" / "c:12" / "r:12": kind, number; or nil, msg. Plain numbers are `default`.
function M.parse_ref(s, default)
  if type(s) ~= "string" then return nil, "missing id" end
  local prefix, num = s:match("^(%a*):?(%d+)$")
  if not num then return nil, string.format("'%s' is not an id (use N, c:N for a candidate or r:N for a run)", s) end
  local kinds = { [""] = default, c = "candidate", candidate = "candidate", r = "run", run = "run" }
  local kind = kinds[prefix:lower()]
  if not kind then return nil, string.format("'%s' is not an id (use N, c:N for a candidate or r:N for a run)", s) end
  return kind, tonumber(num)
end

-- The read commands open the store read-only: they never write it, and work in a
-- read-only folder or mount (docs/STORE.md, "Reading without writing").
local function open_db(cmd, opts)
  local path = opts.db or store.default_path()
  local db, err = store.open(path, { create = false, readonly = true })
  if not db then return nil, say_error(cmd, err) end
  if db.warning then util.eprintf("kloop %s: warning: %s\n", cmd, db.warning) end
  return db
end

function M.fmt_ms(ms)
  if type(ms) ~= "number" then return "-" end
  if ms >= 100 then return string.format("%.1f ms", ms) end
  if ms >= 1 then return string.format("%.3f ms", ms) end
  return string.format("%.2f us", ms * 1e3)
end

local function fmt_x(x) return type(x) == "number" and string.format("%.2fx", x) or "-" end

local function fmt_when(ts)
  if not ts then return "-" end
  return (ts:gsub("T", " "):gsub("%.%d+Z$", ""):gsub("Z$", ""))
end

-- Left-aligned columns; the last column is not padded.
local function print_table(header, rows)
  local all = { header }
  for _, r in ipairs(rows) do all[#all + 1] = r end
  local w = {}
  for _, r in ipairs(all) do
    for i, c in ipairs(r) do w[i] = math.max(w[i] or 0, #tostring(c)) end
  end
  for _, r in ipairs(all) do
    local parts = {}
    for i, c in ipairs(r) do
      parts[i] = i < #r and string.format("%-" .. w[i] .. "s", tostring(c)) or tostring(c)
    end
    print(table.concat(parts, "  "))
  end
end

local function status_of(run)
  if run.status == "running" and run.writer_alive == false then return "stale" end
  return run.status
end

local function params_text(p)
  if type(p) ~= "table" or next(p) == nil then return nil end
  local out = {}
  for _, k in ipairs(util.sorted_keys(p)) do out[#out + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(out, ",")
end

local function parse(cmd, argv, extra)
  local spec = { ["--db"] = "value", ["--json"] = "flag", ["-h"] = "flag", ["--help"] = "flag" }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local opts, pos = args.parse(argv, spec)
  if not opts then return nil, usage_error(cmd, pos) end
  if opts.h or opts.help then
    io.stdout:write(M.usage[cmd], "\n", COMMON, "\n")
    return nil, 0
  end
  return opts, pos
end

---------------------------------------------------------------------------

function M.runs(argv)
  local opts, pos = parse("runs", argv)
  if not opts then return pos end
  if #pos > 0 then return usage_error("runs", "takes no arguments") end
  local db, rc = open_db("runs", opts)
  if not db then return rc end
  local runs = db:runs()
  db:close()
  if opts.json then
    for _, r in ipairs(runs) do r.status = status_of(r) end
    print(json(runs))
    return 0
  end
  if #runs == 0 then
    print("no runs in " .. (opts.db or store.default_path()))
    return 0
  end
  local rows = {}
  for _, r in ipairs(runs) do
    rows[#rows + 1] = { r.id, r.task_name or "-", r.strategy_path and util.basename(r.strategy_path) or "-",
      status_of(r), string.format("%d (%d/%d)", r.n_candidates, r.n_evaluated, r.n_ok), M.fmt_ms(r.best_ms),
      fmt_x(r.speedup), fmt_when(r.started_at) }
  end
  print_table({ "ID", "TASK", "STRATEGY", "STATUS", "CANDIDATES (EVAL/OK)", "BEST", "SPEEDUP", "STARTED (UTC)" }, rows)
  return 0
end

local function show_run(db, id, opts)
  local run, err = db:run(id)
  if not run then return say_error("show", err) end
  local cands = assert(db:candidates(id))
  if opts.json then
    run.status = status_of(run)
    for _, c in ipairs(cands) do c.source = nil end -- `kloop show c:ID --json` has it
    run.candidates = cands
    print(json(run))
    return 0
  end
  print(string.format("run %d: %s (%s)", run.id, run.task_name or "?", run.task_path or "no task path"))
  local function line(k, v) if v ~= nil and v ~= "" then print(string.format("%-11s%s", k, v)) end end
  line("status", status_of(run) .. (run.stop_reason and (": " .. run.stop_reason) or ""))
  line("started", fmt_when(run.started_at) .. (run.ended_at and ("  ended " .. fmt_when(run.ended_at)) or ""))
  line("strategy", run.strategy_path and (run.strategy_path .. "  hash " .. (run.strategy_hash or "-")))
  line("machine", string.format("%s (pid %s)", run.hostname or "?", tostring(run.pid or "?")))
  line("gpu", run.gpu_name and string.format("%s %s", run.gpu_name, run.gpu_arch or ""))
  line("versions", string.format("kloop %s, driver %s, CUDA %s, NVRTC %s", run.kloop_version or "-",
    run.driver_version or "-", run.cuda_version or "-", run.nvrtc_version or "-"))
  line("seed", run.seed and tostring(run.seed))
  line("options", run.options ~= nil and json(run.options) or nil)
  line("budget", run.budget ~= nil and json(run.budget) or nil)
  line("candidates", string.format("%d, %d evaluated, %d ok", run.n_candidates, run.n_evaluated, run.n_ok))
  local best = db:best(id)
  if best then
    line("best", string.format("c:%d %s%s", best.id, M.fmt_ms(best.evaluation.median_ms),
      run.speedup and string.format(" (%.2fx the baseline)", run.speedup) or ""))
  end
  if #cands > 0 then
    print("")
    local rows = {}
    for _, c in ipairs(cands) do
      local e = c.evaluation or {}
      local parents = {}
      for i, p in ipairs(c.parents) do parents[i] = "c:" .. p end
      local speed = (e.verdict == "ok" and run.baseline_ms and e.median_ms and e.median_ms > 0)
        and fmt_x(run.baseline_ms / e.median_ms) or "-"
      rows[#rows + 1] = { "c:" .. c.id, c.proposer, #parents > 0 and table.concat(parents, ",") or "-",
        params_text(c.params) or "-",
        -- a screened result is no full evaluation (docs/TASKS.md, "Stages"): said so
        e.verdict and (e.verdict .. (e.stage == "screened" and " (screened)" or "")) or "(not evaluated)",
        M.fmt_ms(e.median_ms), speed }
    end
    print_table({ "CANDIDATE", "PROPOSER", "PARENTS", "PARAMS", "VERDICT", "MEDIAN", "SPEEDUP" }, rows)
  end
  return 0
end

-- The evaluation block shared by show and best.
local function print_evaluation(e, indent)
  indent = indent or ""
  local function line(k, v) if v ~= nil and v ~= "" then print(string.format("%s%-11s%s", indent, k, v)) end end
  if not e then line("evaluation", "none yet") return end
  line("verdict", e.verdict .. (e.reason and e.reason ~= "" and (": " .. e.reason) or ""))
  if e.median_ms then
    line("time", string.format("%s (95%% CI %s .. %s, min %s, spread %s, %s reps)", M.fmt_ms(e.median_ms),
      M.fmt_ms(e.ci_lo_ms), M.fmt_ms(e.ci_hi_ms), M.fmt_ms(e.min_ms),
      e.spread and string.format("%.1f%%", 100 * e.spread) or "-", tostring(e.reps or "-")))
  end
  if e.tflops then
    line("rate", string.format("%.2f TFLOP/s, %.1f GB/s, %.1f%% of the %s ceiling", e.tflops, e.gbps or 0,
      100 * (e.frac_peak or 0), e.bound or "?"))
  end
  if type(e.evidence) == "table" and next(e.evidence) then line("evidence", json(e.evidence)) end
  if type(e.profile) == "table" then
    local prof = require("kloop.eval.profile")
    local rl = e.profile.bound and prof.roofline_text(e.profile)
    if rl then line("roofline", rl) end
    if e.profile.no_counters then line("counters", "unavailable: " .. tostring(e.profile.no_counters)) end
    for _, h in ipairs(e.profile.hints or {}) do line("hint", h.text) end
  end
  if type(e.resources) == "table" then
    for _, entry in ipairs(util.sorted_keys(e.resources)) do
      local x = e.resources[entry]
      line("resources", string.format("%s: %s registers, %s B static smem, %s B local, spills %s/%s B", entry,
        tostring(x.registers), tostring(x.static_smem), tostring(x.local_bytes or x.stack_bytes),
        tostring(x.spill_stores), tostring(x.spill_loads)))
    end
  end
  line("gpu", e.gpu and (e.gpu .. " " .. (e.arch or "")) or e.arch)
  line("evaluated", fmt_when(e.created_at))
  if e.compile_log and e.compile_log ~= "" then
    print(indent .. "compile log:")
    for l in e.compile_log:gmatch("[^\n]+") do print(indent .. "  " .. l) end
  end
end

local function show_candidate(db, id, opts)
  local c, err = db:candidate(id)
  if not c then return say_error("show", err) end
  local lineage = assert(db:lineage(id))
  local run = db:run(c.run_id)
  if opts.json then
    c.lineage = lineage
    print(json(c))
    return 0
  end
  local function line(k, v) if v ~= nil and v ~= "" then print(string.format("%-11s%s", k, v)) end end
  print(string.format("candidate %d%s (run %d, %s)", c.id, c.name and (" " .. c.name) or "", c.run_id,
    run and run.task_name or "?"))
  local who = { c.proposer }
  if c.model then who[#who + 1] = "model " .. c.model end
  if c.prompt_id then who[#who + 1] = "prompt " .. c.prompt_id .. (c.prompt_hash and ("@" .. c.prompt_hash) or "") end
  if c.llm_seed then who[#who + 1] = "seed " .. tostring(c.llm_seed) end
  line("proposer", table.concat(who, ", "))
  line("sampling", c.sampling ~= nil and json(c.sampling) or nil)
  if c.tokens_in or c.tokens_out or c.cost_usd then
    line("tokens", string.format("%s in, %s out, $%.4f", tostring(c.tokens_in or 0), tostring(c.tokens_out or 0),
      c.cost_usd or 0))
  end
  line("params", params_text(c.params))
  line("plan", c.launch_plan ~= nil and json(c.launch_plan) or nil)
  local nlines = select(2, c.source:gsub("\n", "")) + (c.source:sub(-1) == "\n" and 0 or 1)
  line("source", string.format("%d lines, hash %s", nlines, c.source_hash))
  line("note", c.note)
  line("created", fmt_when(c.created_at))
  print("lineage (the candidate, then its ancestors by generation):")
  local rows = {}
  for _, a in ipairs(lineage) do
    local parents = {}
    for i, p in ipairs(a.parents) do parents[i] = "c:" .. p end
    rows[#rows + 1] = { "  " .. a.depth, "c:" .. a.id, a.proposer, a.model or "-", a.verdict or "(not evaluated)",
      M.fmt_ms(a.median_ms), #parents > 0 and table.concat(parents, ",") or "(root)" }
  end
  print_table({ "  GEN", "CANDIDATE", "PROPOSER", "MODEL", "VERDICT", "MEDIAN", "PARENTS" }, rows)
  print("evaluation:")
  print_evaluation(c.evaluation, "  ")
  if #c.evaluations > 1 then print(string.format("  (%d evaluations; the latest is shown)", #c.evaluations)) end
  return 0
end

function M.show(argv)
  local opts, pos = parse("show", argv, { ["--candidate"] = "value" })
  if not opts then return pos end
  local kind, id
  if opts.candidate then
    if #pos > 0 then return usage_error("show", "give either RUN or --candidate ID") end
    kind, id = M.parse_ref(opts.candidate, "candidate")
    if kind == "run" then return usage_error("show", "--candidate takes a candidate id") end
  else
    if #pos ~= 1 then return usage_error("show", "give one id") end
    kind, id = M.parse_ref(pos[1], "run")
  end
  if not kind then return usage_error("show", id) end
  local db, rc = open_db("show", opts)
  if not db then return rc end
  local r = kind == "run" and show_run(db, id, opts) or show_candidate(db, id, opts)
  db:close()
  return r
end

function M.best(argv)
  local opts, pos = parse("best", argv)
  if not opts then return pos end
  if #pos > 1 then return usage_error("best", "give at most one RUN") end
  local run_id
  if pos[1] then
    local kind, id = M.parse_ref(pos[1], "run")
    if not kind then return usage_error("best", id) end
    if kind ~= "run" then return usage_error("best", "RUN is a run id, not a candidate") end
    run_id = id
  end
  local db, rc = open_db("best", opts)
  if not db then return rc end
  local c, err = db:best(run_id)
  local run = c and db:run(c.run_id)
  db:close()
  if not c then return say_error("best", err) end
  local speed = run and run.baseline_ms and c.evaluation.median_ms > 0 and run.baseline_ms / c.evaluation.median_ms
  if opts.json then
    c.speedup = speed or nil
    print(json(c))
    return 0
  end
  print(string.format("c:%d  run %d  %s  %s  %s%s", c.id, c.run_id, run and run.task_name or "?", c.proposer,
    M.fmt_ms(c.evaluation.median_ms), speed and string.format("  %.2fx the baseline", speed) or ""))
  print_evaluation(c.evaluation, "  ")
  return 0
end

---------------------------------------------------------------------------
-- Line diff (Myers, O((N+M)D)) and unified hunks.

local function lines_of(s)
  local out = {}
  if s == "" then return out end
  for l in (s:sub(-1) == "\n" and s or s .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

-- Edit script between line lists a and b: list of {op = " " | "-" | "+", text}.
function M.diff_lines(a, b)
  local n, m = #a, #b
  local max = n + m
  local v = { [1] = 0 }
  local trace = {}
  local found
  for d = 0, max do
    local snap = {}
    for k, x in pairs(v) do snap[k] = x end
    trace[d] = snap
    for k = -d, d, 2 do
      local x
      if k == -d or (k ~= d and (v[k - 1] or -1) < (v[k + 1] or -1)) then x = v[k + 1] or 0
      else x = (v[k - 1] or 0) + 1 end
      local y = x - k
      while x < n and y < m and a[x + 1] == b[y + 1] do x, y = x + 1, y + 1 end
      v[k] = x
      if x >= n and y >= m then found = d break end
    end
    if found then break end
  end
  -- walk back through the snapshots
  local ops = {}
  local x, y = n, m
  for d = found, 1, -1 do
    local vs = trace[d]
    local k = x - y
    local prev_k
    if k == -d or (k ~= d and (vs[k - 1] or -1) < (vs[k + 1] or -1)) then prev_k = k + 1 else prev_k = k - 1 end
    local px = vs[prev_k] or 0
    local py = px - prev_k
    while x > px and y > py do
      ops[#ops + 1] = { " ", a[x] }
      x, y = x - 1, y - 1
    end
    if x == px then ops[#ops + 1] = { "+", b[y] } y = y - 1
    else ops[#ops + 1] = { "-", a[x] } x = x - 1 end
  end
  while x > 0 and y > 0 do
    ops[#ops + 1] = { " ", a[x] }
    x, y = x - 1, y - 1
  end
  local out = {}
  for i = #ops, 1, -1 do out[#out + 1] = ops[i] end
  return out
end

-- Unified diff text (without the ---/+++ header), and counts of removed and added lines.
function M.unified(a_text, b_text, context)
  context = context or 3
  local ops = M.diff_lines(lines_of(a_text), lines_of(b_text))
  local out, removed, added = {}, 0, 0
  local i = 1
  local aline, bline = 1, 1
  -- line numbers before each op
  local pos = {}
  for k, op in ipairs(ops) do
    pos[k] = { aline, bline }
    if op[1] ~= "+" then aline = aline + 1 end
    if op[1] ~= "-" then bline = bline + 1 end
  end
  while i <= #ops do
    if ops[i][1] == " " then
      i = i + 1
    else
      local s = math.max(1, i - context)
      local e = i
      -- extend while the next change is within 2*context lines
      local last_change = i
      local k = i
      while k <= #ops do
        if ops[k][1] ~= " " then last_change = k
        elseif k - last_change > 2 * context then break end
        k = k + 1
      end
      e = math.min(#ops, last_change + context)
      local acount, bcount = 0, 0
      for q = s, e do
        if ops[q][1] ~= "+" then acount = acount + 1 end
        if ops[q][1] ~= "-" then bcount = bcount + 1 end
      end
      local astart = acount == 0 and pos[s][1] - 1 or pos[s][1]
      local bstart = bcount == 0 and pos[s][2] - 1 or pos[s][2]
      -- diff -u leaves out a count of 1
      local function range(start, count) return count == 1 and tostring(start) or (start .. "," .. count) end
      out[#out + 1] = string.format("@@ -%s +%s @@", range(astart, acount), range(bstart, bcount))
      for q = s, e do
        out[#out + 1] = ops[q][1] .. ops[q][2]
        if ops[q][1] == "-" then removed = removed + 1 elseif ops[q][1] == "+" then added = added + 1 end
      end
      i = e + 1
    end
  end
  return table.concat(out, "\n") .. (#out > 0 and "\n" or ""), removed, added
end

function M.diff(argv)
  local opts, pos = parse("diff", argv, { ["-U"] = "number", ["--unified"] = "number" })
  if not opts then return pos end
  if #pos ~= 2 then return usage_error("diff", "give two candidate ids") end
  local ids = {}
  for i = 1, 2 do
    local kind, id = M.parse_ref(pos[i], "candidate")
    if not kind then return usage_error("diff", id) end
    if kind ~= "candidate" then return usage_error("diff", "diff compares candidates, not runs") end
    ids[i] = id
  end
  local db, rc = open_db("diff", opts)
  if not db then return rc end
  local a, aerr = db:candidate(ids[1])
  local b, berr = db:candidate(ids[2])
  db:close()
  if not a then return say_error("diff", aerr) end
  if not b then return say_error("diff", berr) end
  local body, removed, added = M.unified(a.source, b.source, opts.U or opts.unified or 3)
  local function label(c)
    return string.format("c:%d (run %d, %s%s)", c.id, c.run_id, c.proposer,
      params_text(c.params) and (", " .. params_text(c.params)) or "")
  end
  if opts.json then
    print(json({ a = a.id, b = b.id, removed = removed, added = added, diff = body,
      params_a = a.params, params_b = b.params }))
    return 0
  end
  if body == "" then
    print(string.format("c:%d and c:%d have the same source", a.id, b.id))
    local pa, pb = params_text(a.params) or "", params_text(b.params) or ""
    if pa ~= pb then print(string.format("parameters differ: %s vs %s", pa ~= "" and pa or "none", pb ~= "" and pb or "none")) end
    return 0
  end
  io.stdout:write("--- ", label(a), "\n", "+++ ", label(b), "\n", body)
  return 0
end

---------------------------------------------------------------------------
-- Export.

-- The launch plan at the bench size: the stored one, else from the task on disk.
local function bench_plan(c, run)
  local p = c.launch_plan
  if type(p) == "table" then
    if p.bench then return p.bench, p.size, "the plan recorded with the candidate" end
    if p[1] or p.grid then return p, nil, "the plan recorded with the candidate" end
  end
  if not run.task_path then return nil, nil, "the run has no task path" end
  local task, err = require("kloop.eval.task").load(run.task_path)
  if not task then return nil, nil, "the task could not be loaded here: " .. err end
  local plan = require("kloop.eval.plan")
  local size = task.sizes.bench
  local own = plan.from_source(c.source, task.entry, c.params)
  if own then
    local pl, perr = own(size)
    if pl then return pl, size, "from the candidate's launch comments" end
    return nil, nil, "its launch comments fail at the bench size: " .. tostring(perr)
  end
  local ok, pl = pcall(plan.for_task, task, size)
  if ok then return pl, size, "from the task's launch function" end
  return nil, nil, "the task's launch function fails at the bench size"
end

local function c_ident(s)
  return (tostring(s or "kernel"):gsub("[^%w_]", "_"))
end

local function provenance(c, run)
  local e = c.evaluation or {}
  return {
    candidate = c.id, run = c.run_id, name = c.name, task = run.task_name, task_path = run.task_path,
    source_hash = c.source_hash, params = c.params, launch_plan = c.launch_plan, parents = c.parents,
    proposer = c.proposer, model = c.model, prompt_id = c.prompt_id, prompt_hash = c.prompt_hash,
    sampling = c.sampling, llm_seed = c.llm_seed, tokens_in = c.tokens_in, tokens_out = c.tokens_out,
    cost_usd = c.cost_usd, created_at = c.created_at,
    strategy = run.strategy_path, strategy_hash = run.strategy_hash, run_seed = run.seed,
    kloop_version = run.kloop_version, hostname = run.hostname, gpu_name = run.gpu_name, gpu_arch = run.gpu_arch,
    driver_version = run.driver_version, cuda_version = run.cuda_version, nvrtc_version = run.nvrtc_version,
    evaluation = c.evaluation and {
      verdict = e.verdict, reason = e.reason, median_ms = e.median_ms, ci_ms = e.ci_ms, min_ms = e.min_ms,
      spread = e.spread, reps = e.reps, tflops = e.tflops, gbps = e.gbps, frac_peak = e.frac_peak, bound = e.bound,
      gpu = e.gpu, arch = e.arch, resources = e.resources, created_at = e.created_at, stage = e.stage,
    } or nil,
    baseline_ms = run.baseline_ms,
    speedup = (e.verdict == "ok" and run.baseline_ms and e.median_ms and e.median_ms > 0)
      and run.baseline_ms / e.median_ms or nil,
    lineage = nil,
  }
end

function M.export(argv)
  local opts, pos = parse("export", argv, { ["-o"] = "value", ["--output"] = "value" })
  if not opts then return pos end
  local dir = opts.o or opts.output
  if #pos ~= 1 then return usage_error("export", "give one candidate id") end
  if not dir then return usage_error("export", "give the output folder with -o DIR") end
  local kind, id = M.parse_ref(pos[1], "candidate")
  if not kind then return usage_error("export", id) end
  if kind ~= "candidate" then return usage_error("export", "export takes a candidate id") end
  local db, rc = open_db("export", opts)
  if not db then return rc end
  local c, err = db:candidate(id)
  if not c then db:close() return say_error("export", err) end
  local run = assert(db:run(c.run_id))
  local lineage = assert(db:lineage(id))
  db:close()
  if not util.mkdir_p(dir) then return say_error("export", "cannot create " .. dir) end
  local prov = provenance(c, run)
  local chain = {}
  for i, a in ipairs(lineage) do
    chain[i] = { id = a.id, depth = a.depth, proposer = a.proposer, model = a.model, parents = a.parents,
      verdict = a.verdict, median_ms = a.median_ms }
  end
  prov.lineage = store.array(chain)
  local e = c.evaluation or {}
  local ext = (run.task_path and run.task_path:match("%.c$")) and "c" or "cu"

  -- kernel with a provenance header; parameters become #defines so it compiles as is
  local h = {}
  h[#h + 1] = string.format("// kloop export: candidate %d of run %d, task %s (%s)", c.id, c.run_id,
    run.task_name or "?", run.task_path or "?")
  local who = c.proposer .. (c.model and (", model " .. c.model) or "")
    .. (c.prompt_id and (", prompt " .. c.prompt_id .. (c.prompt_hash and ("@" .. c.prompt_hash) or "")) or "")
    .. (c.llm_seed and (", seed " .. tostring(c.llm_seed)) or "")
  h[#h + 1] = "// proposed by " .. who
  if #c.parents > 0 then
    local ps = {}
    for i, p in ipairs(c.parents) do ps[i] = "c:" .. p end
    h[#h + 1] = "// parents " .. table.concat(ps, ", ")
  end
  if e.verdict then
    h[#h + 1] = string.format("// verdict %s, median %s (95%% CI %s .. %s)%s on %s %s", e.verdict, M.fmt_ms(e.median_ms),
      M.fmt_ms(e.ci_lo_ms), M.fmt_ms(e.ci_hi_ms),
      prov.speedup and string.format(", %.2fx the baseline,", prov.speedup) or "", e.gpu or "?", e.arch or "")
    if e.stage == "screened" then
      h[#h + 1] = "// screened only (one check size, one input set, a few timed runs): not fully evaluated"
    end
  else
    h[#h + 1] = "// not evaluated"
  end
  h[#h + 1] = string.format("// source hash %s, kloop %s, strategy %s; full provenance in provenance.json",
    c.source_hash, run.kloop_version or "?", run.strategy_path or "-")
  local body = table.concat(h, "\n") .. "\n"
  if type(c.params) == "table" and next(c.params) then
    body = body .. "// the candidate's parameters (it was compiled with -D for each)\n"
    for _, k in ipairs(util.sorted_keys(c.params)) do
      body = body .. string.format("#ifndef %s\n#define %s %s\n#endif\n", k, k, tostring(c.params[k]))
    end
  end
  body = body .. c.source
  local kfile = dir .. "/kernel." .. ext
  local ok, werr = util.write_file(kfile, body)
  if not ok then return say_error("export", "cannot write " .. kfile .. ": " .. tostring(werr)) end

  -- launch plan header: constants at the bench size (general plans are Lua functions)
  local plan, size, origin = bench_plan(c, run)
  local guard = "KLOOP_C" .. c.id .. "_LAUNCH_PLAN_H"
  local pre = "kloop_c" .. c.id
  local L = {}
  L[#L + 1] = string.format("/* launch_plan.h: launch plan of kloop candidate %d (task %s)%s. */", c.id,
    run.task_name or "?", size and " at the task's bench size" or "")
  L[#L + 1] = "#ifndef " .. guard
  L[#L + 1] = "#define " .. guard
  if size then
    L[#L + 1] = "/* bench size */"
    for _, k in ipairs(util.sorted_keys(size)) do
      L[#L + 1] = string.format("#define %s_%s %s", pre:upper(), c_ident(k), tostring(size[k]))
    end
  end
  if plan then
    L[#L + 1] = string.format("/* %s; kernels run in this order */", origin)
    L[#L + 1] = "typedef struct { const char *entry; unsigned grid[3]; unsigned block[3]; unsigned smem; } " .. pre .. "_launch;"
    L[#L + 1] = string.format("static const %s_launch %s_plan[] = {", pre, pre)
    for _, l in ipairs(plan) do
      local g, b = l.grid or {}, l.block or {}
      L[#L + 1] = string.format('  { "%s", { %d, %d, %d }, { %d, %d, %d }, %d },', tostring(l.entry or "?"),
        g[1] or 1, g[2] or 1, g[3] or 1, b[1] or 1, b[2] or 1, b[3] or 1, l.smem or 0)
    end
    L[#L + 1] = "};"
    L[#L + 1] = string.format("enum { %s_PLAN_COUNT = %d };", pre:upper(), #plan)
  else
    L[#L + 1] = "/* no launch plan was recorded, and " .. tostring(origin):gsub("%*/", "* /") .. " */"
  end
  L[#L + 1] = "/* as JSON: " .. json(plan or c.launch_plan or cjson.null):gsub("%*/", "* /") .. " */"
  L[#L + 1] = "#endif"
  local hfile = dir .. "/launch_plan.h"
  ok, werr = util.write_file(hfile, table.concat(L, "\n") .. "\n")
  if not ok then return say_error("export", "cannot write " .. hfile .. ": " .. tostring(werr)) end

  prov.bench_size = size
  prov.bench_plan = plan
  local pfile = dir .. "/provenance.json"
  ok, werr = util.write_file(pfile, json(prov) .. "\n")
  if not ok then return say_error("export", "cannot write " .. pfile .. ": " .. tostring(werr)) end
  if opts.json then
    print(json({ candidate = c.id, files = { kfile, hfile, pfile } }))
  else
    print(string.format("c:%d -> %s, %s, %s", c.id, kfile, hfile, pfile))
  end
  return 0
end

---------------------------------------------------------------------------
-- Replay.

function M.replay(argv)
  local opts, pos = parse("replay", argv, { ["--task"] = "value", ["--budget"] = "number", ["--device"] = "number",
    ["--deadline"] = "number" })
  if not opts then return pos end
  if #pos ~= 1 then return usage_error("replay", "give one candidate id") end
  local kind, id = M.parse_ref(pos[1], "candidate")
  if not kind then return usage_error("replay", id) end
  if kind ~= "candidate" then return usage_error("replay", "replay takes a candidate id") end
  local db, rc = open_db("replay", opts)
  if not db then return rc end
  local c, err = db:candidate(id)
  if not c then db:close() return say_error("replay", err) end
  local run = assert(db:run(c.run_id))
  db:close()
  local task_path = opts.task or run.task_path
  if not task_path then return say_error("replay", string.format("run %d has no task path; give --task PATH", run.id)) end
  local task, terr = require("kloop.eval.task").load(task_path)
  if not task then
    return say_error("replay", terr .. (opts.task and "" or " (run it from the folder the run started in, or give --task PATH)"))
  end
  local core = require("kloop.core.ffi")
  if task.backend == "cuda" then
    local gpu, gerr = core.gpu_probe(opts.device or 0)
    if not gpu then return say_error("replay", string.format("no GPU here (%s); the stored evaluation is in `kloop show c:%d`", gerr, c.id)) end
  end
  local ev = require("kloop.eval.evaluator").new(task, { deadline = opts.deadline, device = opts.device,
    timing = { budget = opts.budget or 2.0 } })
  local r = ev:evaluate(c.source, { defines = c.params, name = "c" .. c.id .. "." .. (task.backend == "host" and "c" or "cu") })
  ev:close()
  if r.infrastructure then return say_error("replay", r.reason) end
  local function where(e)
    local w = table.concat({ e.gpu or "", e.arch or "" }, " "):gsub("^%s+", ""):gsub("%s+$", "")
    return w ~= "" and w or "-"
  end
  local old = c.evaluation
  local same = old and old.verdict == r.verdict
  local ratio = old and old.median_ms and r.time_ms and r.time_ms / old.median_ms
  if opts.json then
    r.samples = r.samples or {}
    print(json({ candidate = c.id, stored = old and { verdict = old.verdict, median_ms = old.median_ms,
      ci_ms = old.ci_ms, gpu = old.gpu, arch = old.arch } or nil, now = r, same_verdict = same or false, time_ratio = ratio }))
  else
    print(string.format("%-9s%-14s%-12s%s", "", "verdict", "median", "gpu"))
    if old then
      print(string.format("%-9s%-14s%-12s%s", "stored", old.verdict, M.fmt_ms(old.median_ms), where(old)))
    else
      print("stored   (never evaluated)")
    end
    print(string.format("%-9s%-14s%-12s%s", "now", r.verdict, M.fmt_ms(r.time_ms), where(r)))
    if ratio then print(string.format("time now / stored = %.3f", ratio)) end
    if not same and old then print("verdict changed: " .. (r.reason or "")) end
  end
  if old and not same then return 3 end
  return 0
end

-- A subcommand table for cli.lua: {main = fn} for one of the commands above.
function M.command(name)
  return { main = M[name] }
end

return M
