-- kloop.cli.store_common: what the store commands (runs, show, best, diff, export, replay)
-- share: their common options, opening the store read-only, ids (N, c:N, r:N), tables,
-- JSON output that is always valid UTF-8, and the lines of a candidate and its evaluation.
local args = require("kloop.cli.args")
local util = require("kloop.util")
local store = require("kloop.store.db")

local M = {}

M.COMMON = [[
common options:
  --db PATH     the store (default $KLOOP_DB, else ./kloop.db)
  --json        one JSON document on stdout, for scripts
Exit: 0 ok, 1 error (unknown id, missing or unreadable database), 2 bad usage.]]

-- A command's whole usage text: its own, then the common options.
function M.usage(own) return own .. "\n" .. M.COMMON .. "\n" end

-- Parses argv for store command cmd: --db, --json, -h and the command's own options
-- (extra). Returns opts, positionals; or nil, the exit code (help or bad usage said).
function M.parse(cmd, argv, usage, extra)
  local spec = { ["--db"] = "value", ["--json"] = "flag" }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return args.command(cmd, argv, spec, usage)
end

function M.say_error(cmd, msg)
  util.eprintf("kloop %s: %s\n", cmd, msg)
  return 1
end

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

function M.json(v) return store.encode(M.utf8_safe(v)) end

---------------------------------------------------------------------------

local NOT_AN_ID = "'%s' is not an id (use N, c:N for a candidate or r:N for a run)"

-- "12" / "c:12" / "r:12": kind, number; or nil, msg. Plain numbers are `default`.
function M.parse_ref(s, default)
  if type(s) ~= "string" then return nil, "missing id" end
  local prefix, num = s:match("^(%a*):?(%d+)$")
  local kinds = { [""] = default, c = "candidate", candidate = "candidate", r = "run", run = "run" }
  local kind = num and kinds[prefix:lower()]
  if not kind then return nil, string.format(NOT_AN_ID, s) end
  return kind, tonumber(num)
end

-- The candidate id in s for command cmd (N or c:N); or nil, exit code 2 after bad usage.
-- wrong: the message for a run id.
function M.candidate_ref(cmd, s, usage, wrong)
  local kind, id = M.parse_ref(s, "candidate")
  if not kind then return nil, args.usage_error(cmd, id, usage) end
  if kind ~= "candidate" then return nil, args.usage_error(cmd, wrong, usage) end
  return id
end

-- The stored candidate named by ref (N or c:N; wrong: the message for a run id), its run
-- and, when with_lineage, its lineage; the store is closed again. Or nil, exit code
-- (2 for a bad id, 1 for an unknown one or a store that cannot be read).
function M.stored_candidate(cmd, opts, ref, usage, wrong, with_lineage)
  local id, rc = M.candidate_ref(cmd, ref, usage, wrong)
  if not id then return nil, rc end
  local db
  db, rc = M.open_db(cmd, opts)
  if not db then return nil, rc end
  local c, err = db:candidate(id)
  if not c then db:close() return nil, M.say_error(cmd, err) end
  local run = assert(db:run(c.run_id))
  local lineage = with_lineage and assert(db:lineage(id)) or nil
  db:close()
  return c, run, lineage
end

-- The read commands open the store read-only: they never write it, and work in a
-- read-only folder or mount (docs/STORE.md, "Reading without writing").
-- Returns the store, or nil, exit code 1 after saying why.
function M.open_db(cmd, opts)
  local path = opts.db or store.default_path()
  local db, err = store.open(path, { create = false, readonly = true })
  if not db then return nil, M.say_error(cmd, err) end
  if db.warning then util.eprintf("kloop %s: warning: %s\n", cmd, db.warning) end
  return db
end

-- Left-aligned columns; the last column is not padded.
function M.print_table(header, rows)
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

-- A printer of "key       value" lines (keys padded to 11) that leaves out empty values.
function M.liner(indent)
  indent = indent or ""
  return function(k, v)
    if v ~= nil and v ~= "" then print(string.format("%s%-11s%s", indent, k, v)) end
  end
end

-- A run's status; "stale": still marked running, but its writer on this machine is gone.
function M.status_of(run)
  if run.status == "running" and run.writer_alive == false then return "stale" end
  return run.status
end

-- Parameters as K=V,... in key order; nil when there are none.
function M.params_text(p)
  if type(p) ~= "table" or next(p) == nil then return nil end
  local out = {}
  for _, k in ipairs(util.sorted_keys(p)) do out[#out + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(out, ",")
end

-- Parent ids as "c:1", "c:2", ... (a list).
function M.parent_refs(parents)
  local out = {}
  for i, p in ipairs(parents) do out[i] = "c:" .. p end
  return out
end

-- An evaluation's speedup over the run's baseline: only a verified (ok) time has one.
function M.speedup(run, e)
  if e and e.verdict == "ok" and run.baseline_ms and e.median_ms and e.median_ms > 0 then
    return run.baseline_ms / e.median_ms
  end
  return nil
end

-- Who proposed candidate c: the proposer, its model, prompt and seed, as a list of parts.
function M.proposed_by(c)
  local who = { c.proposer }
  if c.model then who[#who + 1] = "model " .. c.model end
  if c.prompt_id then who[#who + 1] = "prompt " .. c.prompt_id .. (c.prompt_hash and ("@" .. c.prompt_hash) or "") end
  if c.llm_seed then who[#who + 1] = "seed " .. tostring(c.llm_seed) end
  return who
end

-- The evaluation block shared by show and best.
function M.print_evaluation(e, indent)
  indent = indent or ""
  local line = M.liner(indent)
  local fmt_ms = util.fmt_ms
  if not e then line("evaluation", "none yet") return end
  line("verdict", e.verdict .. (e.reason and e.reason ~= "" and (": " .. e.reason) or ""))
  if e.median_ms then
    line("time", string.format("%s (95%% CI %s .. %s, min %s, spread %s, %s reps)", fmt_ms(e.median_ms),
      fmt_ms(e.ci_lo_ms), fmt_ms(e.ci_hi_ms), fmt_ms(e.min_ms),
      e.spread and string.format("%.1f%%", 100 * e.spread) or "-", tostring(e.reps or "-")))
  end
  if e.tflops then
    line("rate", string.format("%.2f TFLOP/s, %.1f GB/s, %.1f%% of the %s ceiling", e.tflops, e.gbps or 0,
      100 * (e.frac_peak or 0), e.bound or "?"))
  end
  if type(e.evidence) == "table" and next(e.evidence) then line("evidence", M.json(e.evidence)) end
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
  line("evaluated", util.fmt_when(e.created_at))
  if e.compile_log and e.compile_log ~= "" then
    print(indent .. "compile log:")
    for l in e.compile_log:gmatch("[^\n]+") do print(indent .. "  " .. l) end
  end
end

-- A candidate's promotion state in one line (docs/PROMOTION.md): "promoted 1.23x [1.20,
-- 1.26] vs c:3 (promotion 4)", "refused at hidden_sizes: N=97 wrong (promotion 5)" or
-- "not promoted"; and the latest promotion row (nil when none). A store older than the
-- promotion tables (schema 5) has none.
function M.promotion_state(db, candidate_id)
  if (db.version or 5) < 5 or not db.latest_promotion then return "not promoted", nil end
  local p = db:latest_promotion(candidate_id)
  if not p then return "not promoted", nil end
  local tail = " (promotion " .. p.id .. ")"
  if p.state == "promoted" then
    local ci = p.ratio_ci or {}
    local inc = p.incumbent_id and ("c:" .. p.incumbent_id) or "the task's kernel"
    return string.format("promoted %s [%.2f, %.2f] vs %s", util.fmt_x(p.ratio), ci[1] or 0 / 0, ci[2] or 0 / 0, inc)
      .. tail, p
  end
  if p.state == "running" then return "promotion " .. p.id .. " still running (or stopped before its end)", p end
  -- the reason up to the failing step's own detail: "refused at hidden_sizes: N=97 wrong"
  local text = p.reason or p.state
  local first = text:find(": ", 1, true)
  local second = first and text:find(": ", first + 2, true)
  return (second and text:sub(1, second - 1) or text) .. tail, p
end

return M
