-- kloop.report.html: the process audit as one self-contained HTML page (inline CSS and SVG, no script, no URL).
--
-- render(data) turns kloop.report.data's table into the page. Sections (each a
-- <section id=...>): summary, progress, models, failures, lineage, top, provenance,
-- drift. Every cell that holds a stored number also carries it raw in data-v (the
-- test reads the DOM and compares with SQL); every text is escaped, so stored reasons
-- and model replies cannot add markup. A missing fact reads "n/a (why)".
local fmt = require("kloop.report.format")
local svg = require("kloop.report.svg")

local M = {}

local esc = fmt.escape

local CSS = [[
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 24px;
  color: #222; background: #fff; font-size: 14px; }
h1 { font-size: 22px; margin: 0 0 4px 0; } h2 { font-size: 18px; margin: 28px 0 8px 0; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin: 16px 0 6px 0; }
table { border-collapse: collapse; margin: 6px 0 12px 0; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.why, .na { color: #888; } td.why { font-size: 11px; } td.t { white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; } .flag { color: #b00; font-weight: 600; } .ok { color: #070; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; } .note { color: #666; font-size: 12px; margin: 2px 0; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
svg text { font-family: system-ui, "DejaVu Sans", sans-serif; font-size: 11px; fill: #333; }
svg .ct { font-size: 13px; font-weight: 600; } svg .frame { fill: none; stroke: #999; }
svg .grid { stroke: #eee; } svg .tx { text-anchor: middle; } svg .ty { text-anchor: end; }
svg .xl { text-anchor: middle; } svg .yl { text-anchor: middle; } svg .series { fill: none; stroke-width: 2; }
svg .hl { stroke: #555; stroke-width: 1.2; } svg .hl.dash { stroke-dasharray: 5 4; } svg .hlt { font-size: 10px; }
svg .bl { text-anchor: end; } svg .bv { text-anchor: middle; fill: #fff; font-size: 10px; } svg .na { fill: #888; }
]]

-- One table: header, rows of cells. A cell is a string or {text, v = raw, k = key,
-- class = ...}; row attributes come from row.attrs.
local function table_html(header, rows, attrs)
  local out = { '<div class="scroll"><table' .. (attrs or "") .. "><thead><tr>" }
  for _, h in ipairs(header) do out[#out + 1] = "<th>" .. esc(h) .. "</th>" end
  out[#out + 1] = "</tr></thead><tbody>"
  for _, r in ipairs(rows) do
    local a = ""
    for _, k in ipairs(r.attr_keys or {}) do a = a .. string.format(' data-%s="%s"', k, esc(r.attrs[k])) end
    out[#out + 1] = "<tr" .. a .. ">"
    for _, c in ipairs(r) do
      if type(c) == "table" then
        local text = tostring(c[1])
        local cls = c.class or (text:match("^n/a") and "why") or (c.v ~= nil and "n") or nil
        out[#out + 1] = string.format("<td%s%s%s>%s</td>", cls and (' class="' .. cls .. '"') or "",
          c.k and (' data-k="' .. esc(c.k) .. '"') or "",
          c.v ~= nil and (' data-v="' .. esc(c.v) .. '"') or "", esc(text))
      else
        local text = tostring(c)
        out[#out + 1] = (text:match("^n/a") and '<td class="why">' or "<td>") .. esc(text) .. "</td>"
      end
    end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</tbody></table></div>"
  return table.concat(out)
end

local function row(cells, attrs, keys)
  cells.attrs, cells.attr_keys = attrs, keys
  return cells
end

-- Cells of a group row: the shared text, with the raw numbers attached.
local function group_row(g)
  local t = fmt.group_cells(g)
  local raw = { run_id = g.run_id, proposals = g.proposals, improvements = g.improvements, tokens_in = g.tokens_in,
    tokens_out = g.tokens_out, cost_usd = g.cost_usd, cost_per_improvement = g.cost_per_improvement,
    latency_s = g.latency_s }
  local cells = {}
  for i, key in ipairs(fmt.GROUP_KEYS) do
    local v = raw[key]
    cells[i] = { t[i], k = key, v = v ~= nil and string.format("%.17g", v) or nil }
    if key == "model" or key == "prompt" or key == "verdicts" then cells[i].class = "t" end
  end
  return row(cells, { run = g.run_id, model = g.model or "-", prompt = g.no_candidate and "-" or fmt.prompt(g) },
    { "run", "model", "prompt" })
end

-- The charts of the progress section: best-so-far against evaluations, wall time,
-- tokens and cost, one series per run, with the baseline, ceiling and library lines.
local function progress(data)
  local function series(getx, gety)
    local out = {}
    for _, r in ipairs(data.runs) do
      local pts = {}
      for _, p in ipairs(r.points) do
        local y = gety(r, p)
        if y then pts[#pts + 1] = { getx(p), y } end
      end
      out[#out + 1] = { name = "run " .. r.run.id, points = pts, step = true }
    end
    return out
  end
  local time_lines, speed_lines, missing = {}, {}, {}
  for _, r in ipairs(data.runs) do
    local L, tag = r.run.lines, #data.runs > 1 and ("run " .. r.run.id .. " ") or ""
    if L.baseline_ms then
      time_lines[#time_lines + 1] = { y = L.baseline_ms, label = tag .. "baseline " .. fmt.ms(L.baseline_ms) }
    else missing[#missing + 1] = tag .. "baseline: " .. fmt.na(L.baseline_why) end
    if L.ceiling_ms then
      time_lines[#time_lines + 1] = { y = L.ceiling_ms, label = tag .. "ceiling " .. fmt.ms(L.ceiling_ms), dash = true }
      if L.baseline_ms then
        speed_lines[#speed_lines + 1] = { y = L.baseline_ms / L.ceiling_ms, label = tag .. "ceiling", dash = true }
      end
    else missing[#missing + 1] = tag .. "roofline ceiling: " .. fmt.na(L.ceiling_why) end
    if L.library_ms then
      time_lines[#time_lines + 1] = { y = L.library_ms,
        label = tag .. (L.library_name or "library") .. " " .. fmt.ms(L.library_ms), dash = true }
      if L.baseline_ms then
        speed_lines[#speed_lines + 1] = { y = L.baseline_ms / L.library_ms, label = tag .. (L.library_name or "library"), dash = true }
      end
    else missing[#missing + 1] = tag .. "library reference: " .. fmt.na(L.library_why) end
  end
  speed_lines[#speed_lines + 1] = { y = 1, label = "baseline 1x" }
  local best = function(_, p) return p.best_ms end
  local speed = function(r, p) return r.run.lines.baseline_ms and p.best_ms and r.run.lines.baseline_ms / p.best_ms end
  local charts = {
    { title = "best time vs candidates evaluated", xlabel = "evaluations", ylabel = "best ms",
      series = series(function(p) return p.n end, best), hlines = time_lines },
    { title = "speedup vs candidates evaluated", xlabel = "evaluations", ylabel = "speedup over baseline",
      series = series(function(p) return p.n end, speed), hlines = speed_lines },
    { title = "best time vs wall time", xlabel = "seconds since the run started", ylabel = "best ms",
      series = series(function(p) return p.wall_s end, best), hlines = time_lines },
    { title = "best time vs tokens spent", xlabel = "tokens (in + out)", ylabel = "best ms",
      series = series(function(p) return p.tokens end, best), hlines = time_lines,
      empty = "no token was spent: no LLM call" },
    { title = "best time vs cost", xlabel = "USD", ylabel = "best ms",
      series = series(function(p) return p.cost_usd end, best), hlines = time_lines,
      empty = "no cost recorded: no priced LLM call" },
  }
  local out = { '<div class="charts">' }
  local notes = {}
  for _, c in ipairs(charts) do
    c.xlog, c.ylog = true, true
    local s, n = svg.line_chart(c)
    out[#out + 1] = '<figure style="margin:0">' .. s .. "</figure>"
    for _, x in ipairs(n or {}) do notes[c.title .. ": " .. x] = true end
  end
  out[#out + 1] = "</div>"
  for _, m in ipairs(missing) do out[#out + 1] = '<p class="note">' .. esc(m) .. "</p>" end
  for _, k in ipairs(require("kloop.util").sorted_keys(notes)) do out[#out + 1] = '<p class="note">' .. esc(k) .. "</p>" end
  return table.concat(out, "\n")
end

local function models(data)
  local groups = {}
  for _, r in ipairs(data.runs) do for _, g in ipairs(r.groups) do groups[#groups + 1] = g end end
  -- side by side across runs: the rows of one template id and model next to each other
  table.sort(groups, function(a, b)
    local ka = (a.prompt_id or "~") .. "\0" .. (a.model or "") .. "\0" .. (a.prompt_hash or "")
    local kb = (b.prompt_id or "~") .. "\0" .. (b.model or "") .. "\0" .. (b.prompt_hash or "")
    if ka ~= kb then return ka < kb end
    return a.run_id < b.run_id
  end)
  if #groups == 0 then return '<p class="na">n/a (no candidate came from a model or prompt: a run without an LLM)</p>' end
  local rows, bars = {}, {}
  for _, g in ipairs(groups) do
    rows[#rows + 1] = group_row(g)
    if not g.no_candidate then
      local parts = {}
      for _, v in ipairs(fmt.verdict_list(g.verdicts)) do parts[#parts + 1] = { v.verdict, v.count } end
      bars[#bars + 1] = { label = string.format("run %d  %s  %s", g.run_id, g.model or "-", fmt.prompt(g)), parts = parts }
    end
  end
  local out = { table_html(fmt.GROUP_HEADER, rows, ' id="models-table"') }
  out[#out + 1] = '<p class="note">An improvement is a verified (ok, full) candidate faster than every verified one before it in its run. '
    .. 'Tokens and cost are the sums of the llm_calls rows; a reply without a candidate (no kernel in it, a failed request)'
    .. ' is its own row.</p>'
  if #bars > 0 then out[#out + 1] = svg.stacked_bars({ title = "verdict shares per model and prompt version", rows = bars }) end
  return table.concat(out, "\n")
end

local function failures(r)
  local out = {}
  if #r.failures == 0 then
    out[#out + 1] = '<p class="na">n/a (no failed candidate in this run)</p>'
  else
    local rows = {}
    for _, f in ipairs(r.failures) do
      local t = fmt.failure_cells(f)
      rows[#rows + 1] = row({ t[1], t[2], { t[3], k = "count", v = f.count }, { t[4], class = "mono" } },
        { verdict = f.verdict, class = f.class }, { "verdict", "class" })
    end
    out[#out + 1] = table_html(fmt.FAILURE_HEADER, rows, ' class="failures"')
  end
  local function counts(title, list, what)
    if #list == 0 then return '<p class="note">' .. esc(title) .. ": " .. esc(fmt.na("no failure names a " .. what)) .. "</p>" end
    local rows = {}
    for _, x in ipairs(list) do
      rows[#rows + 1] = row({ x.name, { tostring(x.count), k = "count", v = x.count } }, { name = x.name }, { "name" })
    end
    return "<h3>" .. esc(title) .. "</h3>" .. table_html({ what, "FAILURES" }, rows, ' class="' .. what .. '"')
  end
  out[#out + 1] = counts("sizes that fail most", r.failing_sizes, "size")
  out[#out + 1] = counts("input sets that fail most", r.failing_sets, "set")
  return table.concat(out, "\n")
end

local function lineage(r)
  if #r.lineage == 0 then return '<p class="na">n/a (no verified candidate in this run)</p>' end
  local rows = {}
  for i, s in ipairs(r.lineage) do
    local t = fmt.lineage_cells(i, s)
    t[7] = { t[7], k = "median_ms", v = s.median_ms and string.format("%.17g", s.median_ms) or nil }
    rows[#rows + 1] = row(t, { id = s.id }, { "id" })
  end
  local chain = {}
  for _, s in ipairs(r.lineage) do chain[#chain + 1] = "c:" .. s.id end
  return '<p class="mono">' .. esc(table.concat(chain, " -> ")) .. "</p>" .. table_html(fmt.LINEAGE_HEADER, rows, ' class="lineage"')
end

local function top(r)
  if #r.top == 0 then return '<p class="na">n/a (no verified candidate in this run)</p>' end
  local rows = {}
  for _, t in ipairs(r.top) do
    local cells = fmt.top_cells(t)
    cells[4] = { cells[4], k = "median_ms", v = string.format("%.17g", t.median_ms) }
    rows[#rows + 1] = row(cells, { id = t.id }, { "id" })
  end
  return table_html(fmt.TOP_HEADER, rows, ' class="top"')
end

local function provenance(r)
  local rows = {}
  for _, kv in ipairs(fmt.provenance(r.run)) do
    rows[#rows + 1] = row({ { kv[1], class = "t" }, { kv[2], class = "mono" } }, { k = kv[1] }, { "k" })
  end
  return table_html({ "FACT", "VALUE" }, rows, ' class="provenance"')
end

local function drift(data)
  if #data.runs < 2 then return '<p class="na">n/a (one run: drift compares several)</p>' end
  local rows = {}
  for _, x in ipairs(fmt.drift_rows(data.drift)) do
    rows[#rows + 1] = row({ x[1], x[2], { x[3], class = "mono" }, x[4], { x[5], class = x.flagged and "flag" or "ok" } },
      { prompt = x[1], run = x.run_id, drift = x.flagged and "yes" or "no" }, { "prompt", "run", "drift" })
  end
  if #rows == 0 then return '<p class="na">n/a (no run used a prompt template)</p>' end
  return table_html(fmt.DRIFT_HEADER, rows, ' class="drift"')
end

local function summary(data)
  local rows = {}
  for _, r in ipairs(data.runs) do
    local run = r.run
    local L = run.lines
    rows[#rows + 1] = row({ tostring(run.id), run.task_name or "?",
      { run.strategy_path and require("kloop.search.loader").display_name(run.strategy_path) or "?", class = "t" }, run.status or "?",
      { tostring(run.n_candidates), k = "candidates", v = run.n_candidates },
      { tostring(run.n_evaluations), k = "evaluations", v = run.n_evaluations },
      { fmt.ms(L.baseline_ms, L.baseline_why), k = "baseline_ms", v = L.baseline_ms and string.format("%.17g", L.baseline_ms) },
      { fmt.ms(run.best_ms, "no verified candidate"), k = "best_ms", v = run.best_ms and string.format("%.17g", run.best_ms) },
      { fmt.x(run.speedup, "no baseline"), k = "speedup" }, fmt.ms(L.ceiling_ms, L.ceiling_why),
      fmt.ms(L.library_ms, L.library_why), fmt.seconds(run.wall_s),
      { tostring(run.tokens), k = "tokens", v = run.tokens },
      { fmt.usd(run.cost_usd, run.llm_calls == 0 and "no LLM call" or "no price known"), k = "cost_usd",
        v = run.cost_usd and string.format("%.17g", run.cost_usd) } }, { run = run.id }, { "run" })
  end
  return table_html({ "RUN", "TASK", "STRATEGY", "STATUS", "CANDIDATES", "EVALUATIONS", "BASELINE", "BEST",
    "SPEEDUP", "CEILING", "LIBRARY", "WALL", "TOKENS", "COST" }, rows, ' id="summary-table"')
end

-- The whole page. opts.generated: a time text for the header (the caller's clock).
function M.render(data, opts)
  opts = opts or {}
  local ids = {}
  for _, r in ipairs(data.runs) do ids[#ids + 1] = tostring(r.run.id) end
  local title = "kloop process audit: run" .. (#ids > 1 and "s " or " ") .. table.concat(ids, ", ")
  local out = { "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
    -- no request of any kind may leave the page: no script, style or image from elsewhere
    [[<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">]],
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>" .. esc(title) .. "</title>", "<style>" .. CSS .. "</style></head><body>",
    "<h1>" .. esc(title) .. "</h1>",
    '<p class="note">store ' .. esc(data.store or "?") .. (opts.generated and (", written " .. esc(opts.generated)) or "")
      .. ". Every number is read from the store; n/a says why a fact is missing.</p>" }
  local function section(id, h, body)
    out[#out + 1] = string.format('<section id="%s"><h2>%s</h2>\n%s\n</section>', id, esc(h), body)
  end
  local function per_run(fn)
    local parts = {}
    for _, r in ipairs(data.runs) do
      parts[#parts + 1] = string.format('<div class="run" data-run="%d"><h3>run %d: %s</h3>%s</div>', r.run.id, r.run.id,
        esc(r.run.task_name or "?"), fn(r))
    end
    return table.concat(parts, "\n")
  end
  section("summary", "Summary", summary(data))
  section("progress", "Progress", progress(data))
  section("models", "Models and prompt versions", models(data))
  section("failures", "Failure taxonomy", per_run(failures))
  section("lineage", "Lineage of the best candidate", per_run(lineage))
  section("top", "Top candidates", per_run(top))
  section("provenance", "Provenance", per_run(provenance))
  section("drift", "Drift across runs", drift(data))
  out[#out + 1] = "</body></html>\n"
  return table.concat(out, "\n")
end

return M
