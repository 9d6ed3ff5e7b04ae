-- kloop.report.format: the number and text formats the HTML report and the terminal audit share.
-- A missing fact is never 0: na(why) says "n/a (why)".
local util = require("kloop.util")

local M = {}

-- Text for HTML and SVG: every markup character escaped (reasons and model text are
-- attacker-controlled), and bytes below 0x20 other than tab and newline dropped.
local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }
function M.escape(s)
  s = tostring(s == nil and "" or s)
  return (s:gsub("[%z\1-\8\11\12\14-\31\127]", ""):gsub("[&<>\"']", ESC))
end

function M.na(why) return why and ("n/a (" .. why .. ")") or "n/a" end

-- (the CLI's formats, kloop.util's fmt_*, with n/a (why) for a missing value)
function M.ms(v, why) return type(v) == "number" and util.fmt_ms(v) or M.na(why) end

function M.x(v, why) return type(v) == "number" and util.fmt_x(v) or M.na(why) end

function M.usd(v, why)
  if type(v) ~= "number" then return M.na(why) end
  if v >= 1 then return string.format("$%.2f", v) end
  return string.format("$%.6f", v)
end

function M.int(v, why) return type(v) == "number" and string.format("%d", v) or M.na(why) end

function M.num(v, fmt, why) return type(v) == "number" and string.format(fmt or "%.3g", v) or M.na(why) end

function M.pct(v, why) return type(v) == "number" and string.format("%.1f%%", 100 * v) or M.na(why) end

function M.seconds(v, why)
  if type(v) ~= "number" then return M.na(why) end
  if v < 1 then return string.format("%.0f ms", v * 1e3) end
  if v < 120 then return string.format("%.1f s", v) end
  return string.format("%.1f min", v / 60)
end

function M.when(ts) return ts and util.fmt_when(ts) or "n/a" end

-- "optimize@2fe52f2d71de84f6", "(no candidate)" for calls that produced none.
function M.prompt(g)
  if g.no_candidate then return "(reply without a candidate)" end
  if not g.prompt_id then return "-" end
  return g.prompt_id .. (g.prompt_hash and ("@" .. g.prompt_hash) or "")
end

-- Verdict counts of a group in a fixed order: ok first, then by count.
function M.verdict_list(verdicts)
  local out = {}
  for v, n in pairs(verdicts or {}) do out[#out + 1] = { verdict = v, count = n } end
  table.sort(out, function(a, b)
    if (a.verdict == "ok") ~= (b.verdict == "ok") then return a.verdict == "ok" end
    if a.count ~= b.count then return a.count > b.count end
    return a.verdict < b.verdict
  end)
  return out
end

function M.verdict_text(verdicts)
  local parts = {}
  for _, v in ipairs(M.verdict_list(verdicts)) do parts[#parts + 1] = v.verdict .. " " .. v.count end
  return #parts > 0 and table.concat(parts, ", ") or "-"
end

-- The rows of the per (model, prompt) table, as text cells; shared by both renderers
-- so the terminal and the page print the same numbers.
M.GROUP_HEADER = { "RUN", "MODEL", "PROMPT", "PROPOSALS", "VERDICTS", "IMPROVEMENTS", "TOKENS IN", "TOKENS OUT",
  "COST", "PER IMPROVEMENT", "LATENCY" }
M.GROUP_KEYS = { "run_id", "model", "prompt", "proposals", "verdicts", "improvements", "tokens_in", "tokens_out",
  "cost_usd", "cost_per_improvement", "latency_s" }

-- Cost and tokens per verified improvement: "$0.000412, 2006 tokens".
function M.per_improvement(g)
  if not g.tokens_per_improvement then return M.na(g.per_improvement_why) end
  return M.usd(g.cost_per_improvement, g.cost_why) .. string.format(", %.0f tokens", g.tokens_per_improvement)
end

function M.group_cells(g)
  return { tostring(g.run_id), g.model or "-", M.prompt(g), M.int(g.proposals), M.verdict_text(g.verdicts),
    M.int(g.improvements), M.int(g.tokens_in), M.int(g.tokens_out), M.usd(g.cost_usd, g.cost_why),
    M.per_improvement(g), M.seconds(g.latency_s, g.latency_why) }
end

M.TOP_HEADER = { "CANDIDATE", "PROPOSER", "MODEL", "TIME", "95% CI", "SPEEDUP", "TFLOP/S", "GB/S", "% OF CEILING",
  "REGISTERS", "SMEM (B)", "HINTS" }

function M.top_cells(t)
  local ceiling_why = "no measured ceiling"
  return { "c:" .. t.id, t.proposer or "-", t.model or "-", M.ms(t.median_ms),
    (t.ci_lo_ms and t.ci_hi_ms) and (M.ms(t.ci_lo_ms) .. " .. " .. M.ms(t.ci_hi_ms)) or M.na("no CI stored"),
    M.x(t.speedup, "no baseline"), M.num(t.tflops, "%.4g"), M.num(t.gbps, "%.4g"),
    M.pct(t.frac_peak, ceiling_why) .. (t.bound and (" " .. t.bound) or ""),
    #t.registers > 0 and table.concat(t.registers, " ") or M.na("not reported"),
    #t.smem > 0 and table.concat(t.smem, " ") or M.na("not reported"),
    #t.hints > 0 and table.concat(t.hints, "; ") or M.na("not profiled") }
end

M.LINEAGE_HEADER = { "STEP", "CANDIDATE", "PROPOSER", "MODEL", "PROMPT", "VERDICT", "TIME", "CHANGE" }

function M.lineage_cells(i, s)
  local change = s.added and string.format("+%d -%d lines", s.added, s.removed) or (s.lines .. " lines (root)")
  return { tostring(i - 1), "c:" .. s.id, s.proposer or "-", s.model or "-",
    s.prompt_id and (s.prompt_id .. "@" .. (s.prompt_hash or "-")) or "-", s.verdict or "(not evaluated)",
    M.ms(s.median_ms, s.verdict ~= "ok" and s.verdict or nil), change }
end

M.FAILURE_HEADER = { "VERDICT", "REASON CLASS", "COUNT", "EXAMPLE" }

function M.failure_cells(f)
  local ex = (f.example or ""):match("^[^\n]*")
  if #ex > 160 then ex = ex:sub(1, 157) .. "..." end
  return { f.verdict, f.class, tostring(f.count), (f.example_id and ("c:" .. f.example_id .. " ") or "") .. ex }
end

-- The drift table across runs: one row per (template id, run), flagged where the
-- runs used different versions or models for that id.
M.DRIFT_HEADER = { "TEMPLATE", "RUN", "VERSIONS", "MODELS", "DRIFT" }

function M.drift_rows(drift)
  local rows = {}
  for _, d in ipairs(drift or {}) do
    local flag = {}
    if d.version_drift then flag[#flag + 1] = "prompt versions differ" end
    if d.model_drift then flag[#flag + 1] = "models differ" end
    for _, x in ipairs(d.runs) do
      rows[#rows + 1] = { d.prompt_id, tostring(x.run_id), x.versions, x.models,
        #flag > 0 and ("DRIFT: " .. table.concat(flag, ", ")) or "same", flagged = #flag > 0, run_id = x.run_id }
    end
  end
  return rows
end

-- The provenance of a run as label, value pairs.
function M.provenance(run)
  local ck = run.clocks or {}
  local clocks
  if ck.why then
    clocks = M.na(ck.why)
  else
    clocks = string.format("SM %s-%s MHz, memory %s-%s MHz, %s-%s C, %s samples", ck.sm_mhz_min, ck.sm_mhz_max,
      tostring(ck.mem_mhz_min), tostring(ck.mem_mhz_max), tostring(ck.temp_c_min), tostring(ck.temp_c_max), ck.samples)
  end
  local throttle = ck.why and M.na(ck.why) or (#ck.throttle > 0 and table.concat(ck.throttle, ", ") or "none seen")
  local st = run.stages or {}
  local cjson = require("cjson")
  local function js(v) if v == nil then return M.na("not stored") end local ok, s = pcall(cjson.encode, v) return ok and s or "?" end
  return {
    { "task", (run.task_name or "?") .. " (" .. (run.task_path or "no task path") .. ")" },
    { "status", (run.status or "?") .. (run.stop_reason and (": " .. run.stop_reason:match("^[^\n]*")) or "") },
    { "started", M.when(run.started_at) .. "  ended " .. M.when(run.ended_at) },
    { "strategy", (run.strategy_path or "?") .. "  hash " .. (run.strategy_hash or "-") },
    { "seed", run.seed and tostring(run.seed) or M.na("not stored") },
    { "budget", js(run.budget) },
    { "options", js(run.options) },
    { "versions", string.format("kloop %s, driver %s, CUDA %s, NVRTC %s", run.kloop_version or "n/a",
      run.driver_version or "n/a", run.cuda_version or "n/a", run.nvrtc_version or "n/a") },
    { "machine", (run.hostname or "?") .. " (pid " .. tostring(run.pid or "?") .. ")" },
    { "gpu", run.gpu_name and (run.gpu_name .. " " .. (run.gpu_arch or "")) or M.na("host run: no GPU") },
    { "clocks", clocks },
    { "throttling", throttle },
    { "stages", string.format("%d full, %d screened only, %d taken from a screen to the full protocol, %d not evaluated",
      st.full or 0, st.screened or 0, st.promoted or 0, st.unevaluated or 0) },
    { "promotion", M.promotion_text(run.promotion) },
    { "llm", string.format("%d calls, %d tokens, %s", run.llm_calls or 0, run.tokens or 0,
      M.usd(run.cost_usd, (run.llm_calls or 0) == 0 and "no LLM call" or "no price known")) },
  }
end

-- The provenance line of a run's latest promotion (kloop promote).
function M.promotion_text(p)
  if not p then return M.na("no candidate of this run was promoted or refused (kloop promote)") end
  local ratio = p.ratio and string.format(" %.2fx [%.2f, %.2f] vs %s", p.ratio, p.ratio_ci_lo or 0 / 0,
    p.ratio_ci_hi or 0 / 0, p.incumbent_id and ("c:" .. p.incumbent_id) or "the task's kernel") or ""
  local why = p.state ~= "promoted" and p.reason and (": " .. p.reason) or ""
  return string.format("c:%d %s%s%s (promotion %d%s)", p.candidate_id, p.state, ratio, why, p.id,
    p.seconds and string.format(", %.1f s", p.seconds) or "")
end

return M
