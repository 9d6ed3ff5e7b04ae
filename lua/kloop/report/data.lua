-- kloop.report.data: everything the process audit shows, gathered from the run store by plain SQL.
--
-- gather(db, run_ids) returns one table (docs/REPORT.md, "Data"): per run its
-- provenance, the progress points (best-so-far against evaluations, wall time, tokens
-- and cost), the lines (baseline, measured ceiling, library reference), the per
-- (model, prompt id@version) groups, the failure taxonomy, the lineage of the best and
-- the top candidates; across the runs the drift of prompt versions and models. Every
-- number comes from a row of the store; a fact the store does not hold is nil with a
-- `why` text beside it (the renderers print "n/a (why)"), never 0.
-- Failure behaviour: an unknown run id or a failed query returns nil, msg.
local cjson = require("cjson")

local M = {}

local function decode(s)
  if type(s) ~= "string" or s == "" then return nil end
  local ok, v = pcall(cjson.decode, s)
  if ok then return v end
  return nil
end

-- Seconds since the epoch of a stored UTC ISO-8601 time (days from the civil date, so
-- no local time zone or DST enters the differences the charts plot).
function M.seconds(ts)
  if type(ts) ~= "string" then return nil end
  local y, mo, d, h, mi, s = ts:match("^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):([%d%.]+)")
  if not y then return nil end
  y, mo = tonumber(y), tonumber(mo)
  if mo <= 2 then y, mo = y - 1, mo + 12 end
  local days = 365 * y + math.floor(y / 4) - math.floor(y / 100) + math.floor(y / 400)
    + math.floor((153 * (mo - 3) + 2) / 5) + tonumber(d)
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60 + tonumber(s)
end

-- A failure reason without its particulars (numbers, quoted names, parenthesized
-- places), so reasons of one kind fall into one class: "C (check 67x45x33, input set
-- 1): relative error 0.31 (limit 1e-05)" -> "C: relative error N".
function M.reason_class(reason)
  if type(reason) ~= "string" or reason == "" then return "(no reason given)" end
  local s = reason:match("^[^\n]*")
  s = s:gsub("%b()", ""):gsub("%b''", "'...'"):gsub("\226\128\152.-\226\128\153", "'...'"):gsub('%b""', '"..."')
  s = s:gsub("0x%x+", "N"):gsub("[%+%-]?%d[%d%.]*[eE]?[%+%-]?%d*", "N")
  s = s:gsub("[;,].*$", ""):gsub("%s+([:;,])", "%1"):gsub("%s+", " "):gsub("^%s+", ""):gsub("%s+$", "")
  if #s > 72 then s = s:sub(1, 69) .. "..." end
  return s ~= "" and s or "(no reason given)"
end

-- Lines added and removed from parent to child, counted as multisets of lines (a
-- moved line counts neither way): the size of the change, not a diff.
function M.change_size(parent_src, child_src)
  local count = {}
  for l in M.lines(parent_src) do count[l] = (count[l] or 0) + 1 end
  local added = 0
  for l in M.lines(child_src) do
    if (count[l] or 0) > 0 then count[l] = count[l] - 1 else added = added + 1 end
  end
  local removed = 0
  for _, n in pairs(count) do removed = removed + n end
  return added, removed
end

-- The lines of a text (a last line without its newline counts; no empty line after
-- a final newline).
function M.lines(s)
  s = s or ""
  if s ~= "" and s:sub(-1) ~= "\n" then s = s .. "\n" end
  return s:gmatch("([^\n]*)\n")
end

local function q(db, sql, ...)
  local rows, err = db:query(sql, ...)
  if not rows then error({ report_error = "store query failed: " .. tostring(err) }, 0) end
  return rows
end

-- A full evaluation is a best candidate's evidence; a screened one is not (docs/STORE.md).
local FULL = "coalesce(e.stage, 'full') = 'full'"

-- The latest evaluation of each candidate of a run, with its candidate's columns.
local LATEST = [[
SELECT c.id, c.name, c.proposer, c.model, c.prompt_id, c.prompt_hash, c.tokens_in AS c_tin,
  c.tokens_out AS c_tout, c.cost_usd AS c_cost, c.created_at AS c_at, c.source,
  e.id AS eid, e.verdict, e.reason, e.evidence_json, e.resources_json, e.median_ms, e.ci_lo_ms,
  e.ci_hi_ms, e.tflops, e.gbps, e.frac_peak, e.bound, e.floor_ms, e.profile_json, e.extra_json,
  e.stage, e.created_at AS e_at, e.wall_seconds, e.compile_log
FROM candidates c LEFT JOIN evaluations e ON e.id =
  (SELECT max(x.id) FROM evaluations x WHERE x.candidate_id = c.id)
WHERE c.run_id = ? ORDER BY c.id]]

local function group_key(c)
  return (c.model or "-") .. "\0" .. (c.prompt_id or "-") .. "\0" .. (c.prompt_hash or "-")
end

local function new_group(run_id, model, prompt_id, prompt_hash)
  return { run_id = run_id, model = model, prompt_id = prompt_id, prompt_hash = prompt_hash,
    proposals = 0, evaluated = 0, verdicts = {}, improvements = 0, tokens_in = 0, tokens_out = 0,
    cost_usd = nil, calls = 0, latency_sum = 0, latency_n = 0, unpriced = 0 }
end

-- Adds the llm_calls rows of one candidate (or of calls that produced none) to a group.
local function add_calls(g, calls)
  for _, l in ipairs(calls) do
    g.calls = g.calls + 1
    g.tokens_in = g.tokens_in + (l.tokens_in or 0)
    g.tokens_out = g.tokens_out + (l.tokens_out or 0)
    if l.cost_usd then g.cost_usd = (g.cost_usd or 0) + l.cost_usd
    elseif (l.tokens_in or 0) + (l.tokens_out or 0) > 0 then g.unpriced = g.unpriced + 1 end
    if l.latency_s and l.outcome ~= "cached" then
      g.latency_sum, g.latency_n = g.latency_sum + l.latency_s, g.latency_n + 1
    end
  end
end

-- The derived numbers of a group, each nil with a why when it cannot be had.
local function finish_group(g)
  g.latency_s = g.latency_n > 0 and g.latency_sum / g.latency_n or nil
  if not g.latency_s then g.latency_why = g.calls == 0 and "no LLM call" or "no timed request" end
  if g.cost_usd == nil then
    g.cost_why = g.calls == 0 and "no LLM call" or "no price known for this model"
  end
  if g.improvements > 0 then
    g.tokens_per_improvement = (g.tokens_in + g.tokens_out) / g.improvements
    if g.cost_usd then g.cost_per_improvement = g.cost_usd / g.improvements end
  else
    g.per_improvement_why = "no verified improvement"
  end
  g.latency_sum, g.latency_n = nil, nil
end

-- Clocks and throttling the evaluations saw (NVML samples in extra_json.clocks).
local function clocks_of(rows)
  local out = { samples = 0, throttle = {} }
  for _, c in ipairs(rows) do
    local extra = decode(c.extra_json)
    local ck = type(extra) == "table" and extra.clocks
    if type(ck) == "table" then
      for _, when in ipairs({ "before", "after" }) do
        local s = ck[when]
        if type(s) == "table" and tonumber(s.sm_mhz) then
          out.samples = out.samples + 1
          local function span(k, v)
            v = tonumber(v)
            if not v then return end
            out[k .. "_min"] = math.min(out[k .. "_min"] or v, v)
            out[k .. "_max"] = math.max(out[k .. "_max"] or v, v)
          end
          span("sm_mhz", s.sm_mhz) span("mem_mhz", s.mem_mhz) span("temp_c", s.temp_c) span("power_w", s.power_w)
          local t = tonumber(s.throttle)
          if t and t ~= 0 then out.throttle[string.format("0x%x", t)] = true end
        end
      end
    end
  end
  if out.samples == 0 then out.why = "no NVML sample stored (a host run, or NVML absent)" end
  local t = {}
  for k in pairs(out.throttle) do t[#t + 1] = k end
  table.sort(t)
  out.throttle = t
  return out
end

-- Registers and shared memory per entry of a resources_json, and profile hints.
local function resources_of(c)
  local res = decode(c.resources_json)
  local regs, smem = {}, {}
  if type(res) == "table" then
    for entry, x in pairs(res) do
      if type(x) == "table" then
        if tonumber(x.registers) then regs[#regs + 1] = entry .. ":" .. x.registers end
        if tonumber(x.static_smem) then smem[#smem + 1] = entry .. ":" .. x.static_smem end
      end
    end
  end
  table.sort(regs) table.sort(smem)
  local hints = {}
  local prof = decode(c.profile_json)
  if type(prof) == "table" and type(prof.hints) == "table" then
    for _, h in ipairs(prof.hints) do
      if type(h) == "table" and h.text then hints[#hints + 1] = tostring(h.text) end
    end
  end
  return regs, smem, hints
end

-- The lineage of candidate id: first parent back to the root, root first, each step
-- with its time and the size of its change from its parent.
local function lineage(db, id)
  local chain, seen = {}, {}
  while id and not seen[id] do
    seen[id] = true
    local row = q(db, [[
SELECT c.id, c.run_id, c.proposer, c.model, c.prompt_id, c.prompt_hash, c.source,
  (SELECT e.verdict FROM evaluations e WHERE e.candidate_id = c.id ORDER BY e.id DESC LIMIT 1) AS verdict,
  (SELECT e.median_ms FROM evaluations e WHERE e.candidate_id = c.id ORDER BY e.id DESC LIMIT 1) AS median_ms,
  (SELECT p.parent_id FROM candidate_parents p WHERE p.candidate_id = c.id ORDER BY p.position LIMIT 1) AS parent_id
FROM candidates c WHERE c.id = ?]], id)[1]
    if not row then break end
    table.insert(chain, 1, row)
    id = row.parent_id
  end
  for i, step in ipairs(chain) do
    if i > 1 then step.added, step.removed = M.change_size(chain[i - 1].source, step.source) end
    step.lines = 0
    for _ in M.lines(step.source) do step.lines = step.lines + 1 end
  end
  for _, step in ipairs(chain) do step.source = nil end
  return chain
end

local function run_facts(db, id)
  local r = q(db, "SELECT * FROM runs WHERE id = ?", id)[1]
  if not r then return nil end
  r.options, r.budget = decode(r.options_json), decode(r.budget_json)
  r.options_json, r.budget_json, r.strategy_text = nil, nil, nil
  r.t0 = M.seconds(r.started_at)
  return r
end

-- One run: provenance, progress, lines, groups, failures, lineage, top candidates.
local function gather_run(db, id, top_n)
  local run = run_facts(db, id)
  if not run then return nil, string.format("no run %d in the store", id) end
  local cands = q(db, LATEST, id)
  local calls = q(db, [[SELECT id, candidate_id, model, latency_s, tokens_in, tokens_out, cost_usd, error,
    outcome, kind, created_at FROM llm_calls WHERE run_id = ? ORDER BY id]], id)
  local calls_of, loose = {}, {}
  for _, l in ipairs(calls) do
    if l.candidate_id then
      calls_of[l.candidate_id] = calls_of[l.candidate_id] or {}
      table.insert(calls_of[l.candidate_id], l)
    else
      loose[#loose + 1] = l
    end
  end

  -- progress in evaluation order: best-so-far over full ok evaluations; an improvement
  -- is a non-baseline candidate that beat every full ok time before it
  local evals = q(db, [[SELECT e.id, e.candidate_id, e.verdict, e.median_ms, e.created_at, c.proposer
    FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND ]] .. FULL .. " ORDER BY e.id", id)
  local improved, points, best = {}, {}, nil
  local ci, tin, tout, cost = 1, 0, 0, nil
  for n, e in ipairs(evals) do
    -- the tokens and money spent up to this evaluation (calls sent before it ended)
    while calls[ci] and calls[ci].created_at <= e.created_at do
      local l = calls[ci]
      tin, tout = tin + (l.tokens_in or 0), tout + (l.tokens_out or 0)
      if l.cost_usd then cost = (cost or 0) + l.cost_usd end
      ci = ci + 1
    end
    if e.verdict == "ok" and e.median_ms and e.median_ms > 0 then
      if best and e.median_ms < best and e.proposer ~= "baseline" then improved[e.candidate_id] = true end
      if not best or e.median_ms < best then best = e.median_ms end
    end
    local t = M.seconds(e.created_at)
    points[#points + 1] = { n = n, eval_id = e.id, candidate_id = e.candidate_id, best_ms = best,
      wall_s = t and run.t0 and t - run.t0 or nil, tokens = tin + tout, cost_usd = cost }
  end

  local groups, gindex = {}, {}
  local failures, findex, sizes, sets = {}, {}, {}, {}
  local top, baseline_ms, floor_ms, best_c = {}, nil, nil, nil
  local stages = { full = 0, screened = 0, promoted = 0, unevaluated = 0 }
  for _, c in ipairs(cands) do
    if c.proposer ~= "baseline" then
      local k = group_key(c)
      local g = gindex[k]
      if not g then
        g = new_group(id, c.model, c.prompt_id, c.prompt_hash)
        gindex[k] = g
        groups[#groups + 1] = g
      end
      g.proposals = g.proposals + 1
      local v = c.verdict or "(not evaluated)"
      g.verdicts[v] = (g.verdicts[v] or 0) + 1
      if c.verdict then g.evaluated = g.evaluated + 1 end
      if improved[c.id] then g.improvements = g.improvements + 1 end
      if calls_of[c.id] then
        add_calls(g, calls_of[c.id])
      else -- a candidate written without its call rows (an older store): its own columns
        add_calls(g, { { tokens_in = c.c_tin, tokens_out = c.c_tout, cost_usd = c.c_cost } })
        if not (c.c_tin or c.c_tout) then g.calls = g.calls - 1 end
      end
    end
    if not c.verdict then
      stages.unevaluated = stages.unevaluated + 1
    else
      local stage = c.stage or "full"
      stages[stage] = (stages[stage] or 0) + 1
      local extra = decode(c.extra_json)
      if type(extra) == "table" and extra.promoted then stages.promoted = stages.promoted + 1 end
    end
    if c.verdict and c.verdict ~= "ok" then
      -- a compile error's reason is generic; its log's first error line says which
      local err_line = c.verdict == "compile_error" and c.compile_log and c.compile_log:match("[^\n]*error[^\n]*")
      local reason = err_line and (c.reason .. ": " .. err_line:gsub("^.-error:%s*", "")) or c.reason
      local cls = M.reason_class(reason)
      local k = c.verdict .. "\0" .. cls
      local f = findex[k]
      if not f then
        f = { verdict = c.verdict, class = cls, count = 0, example = reason, example_id = c.id, candidates = {} }
        findex[k] = f
        failures[#failures + 1] = f
      end
      f.count = f.count + 1
      f.candidates[#f.candidates + 1] = c.id
      local ev = decode(c.evidence_json)
      if type(ev) == "table" then
        if ev.case then sizes[tostring(ev.case)] = (sizes[tostring(ev.case)] or 0) + 1 end
        if ev.set then sets[tostring(ev.set)] = (sets[tostring(ev.set)] or 0) + 1 end
      end
    end
    if c.verdict == "ok" and (c.stage or "full") == "full" and c.median_ms then
      if c.proposer == "baseline" then baseline_ms = math.min(baseline_ms or c.median_ms, c.median_ms) end
      if c.floor_ms then floor_ms = math.min(floor_ms or c.floor_ms, c.floor_ms) end
      top[#top + 1] = c
      if not best_c or c.median_ms < best_c.median_ms then best_c = c end
    end
  end
  -- calls that produced no candidate (a reply without a kernel, a failed request):
  -- their tokens and money are spent all the same, one row per model
  local lindex = {}
  for _, l in ipairs(loose) do
    local k = l.model or "-"
    if not lindex[k] then
      lindex[k] = new_group(id, l.model, nil, nil)
      lindex[k].no_candidate = true
      groups[#groups + 1] = lindex[k]
    end
    add_calls(lindex[k], { l })
  end
  for _, g in ipairs(groups) do finish_group(g) end
  for _, l in ipairs(loose) do
    if l.error then
      local cls = (l.kind and (l.kind .. ": ") or "") .. M.reason_class(l.error)
      local k = "llm\0" .. cls
      if not findex[k] then
        findex[k] = { verdict = "llm_error", class = cls, count = 0, example = l.error, candidates = {} }
        failures[#failures + 1] = findex[k]
      end
      findex[k].count = findex[k].count + 1
    end
  end
  table.sort(failures, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    return a.verdict .. a.class < b.verdict .. b.class
  end)

  table.sort(top, function(a, b) return a.median_ms < b.median_ms end)
  local tops = {}
  for i = 1, math.min(top_n, #top) do
    local c = top[i]
    local regs, smem, hints = resources_of(c)
    tops[i] = { id = c.id, proposer = c.proposer, model = c.model, prompt_id = c.prompt_id,
      median_ms = c.median_ms, ci_lo_ms = c.ci_lo_ms, ci_hi_ms = c.ci_hi_ms, tflops = c.tflops,
      gbps = c.gbps, frac_peak = c.frac_peak, bound = c.bound, registers = regs, smem = smem, hints = hints,
      speedup = baseline_ms and c.median_ms > 0 and baseline_ms / c.median_ms or nil }
  end

  local function counted(t)
    local out = {}
    for k, n in pairs(t) do out[#out + 1] = { name = k, count = n } end
    table.sort(out, function(a, b) if a.count ~= b.count then return a.count > b.count end return a.name < b.name end)
    return out
  end

  local is_host = (run.gpu_name == nil or run.gpu_name == "")
  run.lines = {
    baseline_ms = baseline_ms,
    baseline_why = not baseline_ms and "the baseline has no verified full evaluation" or nil,
    ceiling_ms = floor_ms,
    ceiling_why = not floor_ms and (is_host and "host run: no measured GPU ceiling"
      or "no evaluation stored a physical floor (no measured peaks)") or nil,
    library_ms = type(run.options) == "table" and tonumber(run.options.library_ms) or nil,
    library_name = type(run.options) == "table" and run.options.library or nil,
  }
  if not run.lines.library_ms then
    run.lines.library_why = "the store records no library reference time for this task"
  end
  run.best_ms = best_c and best_c.median_ms or nil
  run.best_id = best_c and best_c.id or nil
  run.speedup = baseline_ms and run.best_ms and run.best_ms > 0 and baseline_ms / run.best_ms or nil
  run.n_candidates, run.n_evaluations = #cands, #evals
  run.wall_s = run.t0 and M.seconds(run.ended_at or (evals[#evals] or {}).created_at or run.started_at)
  if run.wall_s then run.wall_s = run.wall_s - run.t0 end
  run.tokens, run.cost_usd = 0, nil
  for _, l in ipairs(calls) do
    run.tokens = run.tokens + (l.tokens_in or 0) + (l.tokens_out or 0)
    if l.cost_usd then run.cost_usd = (run.cost_usd or 0) + l.cost_usd end
  end
  run.llm_calls = #calls
  run.clocks = clocks_of(cands)
  run.stages = stages
  run.promotion = M.promotion_of(db, id)
  run.t0 = nil
  return {
    run = run, points = points, groups = groups, failures = failures,
    failing_sizes = counted(sizes), failing_sets = counted(sets),
    lineage = best_c and lineage(db, best_c.id) or {}, top = tops,
  }
end

-- Drift across runs: for each template id, the versions and models each run used; a
-- flag where two runs differ.
local function drift(runs)
  local by_id, order = {}, {}
  for _, r in ipairs(runs) do
    for _, g in ipairs(r.groups) do
      if g.prompt_id then
        local d = by_id[g.prompt_id]
        if not d then
          d = { prompt_id = g.prompt_id, per_run = {} }
          by_id[g.prompt_id] = d
          order[#order + 1] = g.prompt_id
        end
        local pr = d.per_run[r.run.id] or { versions = {}, models = {} }
        d.per_run[r.run.id] = pr
        pr.versions[g.prompt_hash or "-"] = true
        pr.models[g.model or "-"] = true
      end
    end
  end
  local out = {}
  table.sort(order)
  local function keys(t) local k = {} for x in pairs(t) do k[#k + 1] = x end table.sort(k) return table.concat(k, ",") end
  for _, id in ipairs(order) do
    local d = by_id[id]
    local rows, vset, mset, nruns = {}, {}, {}, 0
    for _, r in ipairs(runs) do
      local pr = d.per_run[r.run.id]
      if pr then
        nruns = nruns + 1
        rows[#rows + 1] = { run_id = r.run.id, versions = keys(pr.versions), models = keys(pr.models) }
        vset[rows[#rows].versions] = true
        mset[rows[#rows].models] = true
      end
    end
    local nv, nm = 0, 0
    for _ in pairs(vset) do nv = nv + 1 end
    for _ in pairs(mset) do nm = nm + 1 end
    out[#out + 1] = { prompt_id = id, runs = rows, version_drift = nv > 1, model_drift = nm > 1 }
  end
  return out
end

-- Everything for run_ids (a list; empty: the latest run). Returns the table or nil, msg.
function M.gather(db, run_ids, opts)
  opts = opts or {}
  local ids = {}
  for i, v in ipairs(run_ids or {}) do ids[i] = v end
  if #ids == 0 then
    local rows, err = db:query("SELECT max(id) AS id FROM runs")
    if not rows then return nil, "store query failed: " .. tostring(err) end
    if not rows[1].id then return nil, "no runs in the store" end
    ids[1] = rows[1].id
  end
  local ok, res = pcall(function()
    local runs = {}
    for i, id in ipairs(ids) do
      local r, err = gather_run(db, id, opts.top or 10)
      if not r then return { err = err } end
      runs[i] = r
    end
    return { runs = runs, drift = drift(runs), store = db.path }
  end)
  if not ok then
    if type(res) == "table" and res.report_error then return nil, res.report_error end
    error(res, 0)
  end
  if res.err then return nil, res.err end
  return res
end

-- The latest `kloop promote` of one of the run's candidates (docs/PROMOTION.md), or nil
-- (none, or a store from before promotions existed).
function M.promotion_of(db, run_id)
  local has = db:query("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'promotions'")
  if not has or not has[1] then return nil end
  local rows = db:query([[SELECT p.id, p.candidate_id, p.incumbent_id, p.state, p.reason, p.ratio, p.ratio_ci_lo,
    p.ratio_ci_hi, p.seconds FROM promotions p JOIN candidates c ON c.id = p.candidate_id
    WHERE c.run_id = ? ORDER BY p.id DESC LIMIT 1]], run_id)
  return rows and rows[1] or nil
end

return M
