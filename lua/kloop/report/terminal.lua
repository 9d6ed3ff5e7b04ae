-- kloop.report.terminal: the process audit's tables as aligned text for `kloop audit` (colour only on a terminal, never with NO_COLOR).
-- The cells come from kloop.report.format, the same text the HTML page shows.
local fmt = require("kloop.report.format")

local M = {}

-- Colour when stdout is a terminal and NO_COLOR is unset or empty (no-color.org).
function M.use_color(fd)
  local nc = os.getenv("NO_COLOR")
  if nc and nc ~= "" then return false end
  return require("kloop.core.sys").isatty(fd or 1)
end

local function painter(color)
  if not color then return function(_, s) return s end end
  local codes = { bold = "1", red = "31", green = "32", dim = "2" }
  return function(what, s) return "\27[" .. codes[what] .. "m" .. s .. "\27[0m" end
end

-- Width on a terminal: UTF-8 characters, not bytes (a compiler's quotes are 3 bytes).
local function width(s) return #s:gsub("[\128-\191]", "") end

-- Left-aligned columns (the last not padded); paint(i, cell) may colour a cell after
-- its width is counted, so colour never shifts a column.
local function table_text(out, header, rows, paint, color)
  local all = { header }
  for _, r in ipairs(rows) do all[#all + 1] = r end
  local w = {}
  for _, r in ipairs(all) do
    for i, c in ipairs(r) do w[i] = math.max(w[i] or 0, width(tostring(c))) end
  end
  for n, r in ipairs(all) do
    local parts = {}
    for i, c in ipairs(r) do
      local s = tostring(c)
      local pad = i < #r and string.rep(" ", w[i] - width(s)) or ""
      if n == 1 then s = paint("bold", s)
      elseif color then s = color(i, s) end
      parts[i] = s .. pad
    end
    out[#out + 1] = table.concat(parts, "  ")
  end
end

function M.render(data, opts)
  opts = opts or {}
  local paint = painter(opts.color)
  local out = {}
  local function heading(s)
    if #out > 0 then out[#out + 1] = "" end
    out[#out + 1] = paint("bold", s)
  end
  local function na_color(_, s) return s:match("^n/a") and paint("dim", s) or s end

  heading("runs")
  local rows = {}
  for _, r in ipairs(data.runs) do
    local run, L = r.run, r.run.lines
    rows[#rows + 1] = { tostring(run.id), run.task_name or "?", run.status or "?", tostring(run.n_candidates),
      tostring(run.n_evaluations), fmt.ms(L.baseline_ms, L.baseline_why), fmt.ms(run.best_ms, "no verified candidate"),
      fmt.x(run.speedup, "no baseline"), fmt.ms(L.ceiling_ms, L.ceiling_why), fmt.seconds(run.wall_s),
      tostring(run.tokens), fmt.usd(run.cost_usd, run.llm_calls == 0 and "no LLM call" or "no price known") }
  end
  table_text(out, { "RUN", "TASK", "STATUS", "CANDIDATES", "EVALUATIONS", "BASELINE", "BEST", "SPEEDUP", "CEILING",
    "WALL", "TOKENS", "COST" }, rows, paint, na_color)

  heading("models and prompt versions")
  rows = {}
  for _, r in ipairs(data.runs) do for _, g in ipairs(r.groups) do rows[#rows + 1] = fmt.group_cells(g) end end
  if #rows == 0 then out[#out + 1] = "n/a (no candidate came from a model or prompt: a run without an LLM)"
  else table_text(out, fmt.GROUP_HEADER, rows, paint, na_color) end

  for _, r in ipairs(data.runs) do
    local id = r.run.id
    heading(string.format("run %d: failure taxonomy", id))
    rows = {}
    for _, f in ipairs(r.failures) do rows[#rows + 1] = fmt.failure_cells(f) end
    if #rows == 0 then out[#out + 1] = "n/a (no failed candidate in this run)"
    else table_text(out, fmt.FAILURE_HEADER, rows, paint, function(i, s) return i == 1 and paint("red", s) or s end) end
    local function counts(label, list)
      local parts = {}
      for _, x in ipairs(list) do parts[#parts + 1] = x.name .. " " .. x.count end
      out[#out + 1] = label .. ": " .. (#parts > 0 and table.concat(parts, ", ") or "n/a (no failure names one)")
    end
    counts("failing sizes", r.failing_sizes)
    counts("failing input sets", r.failing_sets)

    heading(string.format("run %d: lineage of the best candidate", id))
    rows = {}
    for i, s in ipairs(r.lineage) do rows[#rows + 1] = fmt.lineage_cells(i, s) end
    if #rows == 0 then out[#out + 1] = "n/a (no verified candidate in this run)"
    else table_text(out, fmt.LINEAGE_HEADER, rows, paint, na_color) end

    heading(string.format("run %d: top candidates", id))
    rows = {}
    for _, t in ipairs(r.top) do rows[#rows + 1] = fmt.top_cells(t) end
    if #rows == 0 then out[#out + 1] = "n/a (no verified candidate in this run)"
    else table_text(out, fmt.TOP_HEADER, rows, paint, na_color) end

    heading(string.format("run %d: provenance", id))
    rows = {}
    for _, kv in ipairs(fmt.provenance(r.run)) do rows[#rows + 1] = { kv[1], kv[2] } end
    table_text(out, { "FACT", "VALUE" }, rows, paint, na_color)
  end

  if #data.runs > 1 then
    heading("drift across runs")
    rows = fmt.drift_rows(data.drift)
    if #rows == 0 then out[#out + 1] = "n/a (no run used a prompt template)"
    else table_text(out, fmt.DRIFT_HEADER, rows, paint,
      function(i, s) return i == 5 and s:match("^DRIFT") and paint("red", s) or s end) end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
