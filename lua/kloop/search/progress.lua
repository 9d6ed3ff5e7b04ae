-- kloop.search.progress: what a run shows while it runs and when it ends: a line per
-- evaluated candidate, the status line a terminal keeps under them, the wait for a
-- model, and the summary. The functions in `methods` are methods of the driver's
-- context (kloop.search.driver installs them); summary(ctx, status, reason) ends a run.
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local rng = require("kloop.search.rng")

local M = {}
local P = {}
M.methods = P

-- The baseline's time over the candidate's, or nil.
function P:speedup(cand)
  local b = self.baseline and self.baseline.result
  if not (b and b.time_ms and cand.result and cand.result.time_ms) then return nil end
  return b.time_ms / cand.result.time_ms
end

-- The product of the crowning A/B ratios from the baseline to cand (each A/B timed both
-- sides on one worker, interleaved), or nil when the chain is not whole. With several
-- workers this is the within-device speedup; the medians' ratio mixes workers.
function P:ab_chain(cand)
  local prod, c = 1, cand
  for _ = 1, #self.history do
    local ab = c and c.result and c.result.ab
    if not (ab and ab.ratio and ab.faster) then return nil end
    prod = prod * ab.ratio
    if ab.vs_baseline then return prod end
    c = self.history[ab.vs]
  end
  return nil
end

-- How a candidate reads in a line: its parameters, else its label or proposer.
function P:describe(cand)
  local d = {}
  for _, k in ipairs(util.sorted_keys(cand.defines or {})) do d[#d + 1] = k .. "=" .. tostring(cand.defines[k]) end
  return (#d > 0 and table.concat(d, " ") or (cand.label or cand.proposer or ""))
end

-- "ok 3, wrong 1"
function P:verdict_text()
  local vs = {}
  for _, k in ipairs(util.sorted_keys(self.verdicts)) do vs[#vs + 1] = k .. " " .. self.verdicts[k] end
  return table.concat(vs, ", ")
end

-- On a terminal, a status line stays under the log lines and is redrawn after each.
function P:status_line()
  local n = #self.history - 1
  local dt = sys.now() - self.t0
  local best = self.best and self.best.result.time_ms
  local sp = self.best and self:speedup(self.best)
  return string.format("%d/%d | %s | best %s%s | %.1f/min | tokens %d | $%.3f", n, self.opts.budget,
    self:verdict_text(), best and string.format("%.4f ms", best) or "-", sp and string.format(" (%.2fx)", sp) or "",
    n / math.max(dt, 1e-9) * 60, self.tokens or 0, self.cost or 0)
end

-- A reply is awaited: on a terminal the status line says for which model and how
-- long; elsewhere one line at 30 s, 60 s, 120 s, ... (stderr), so a slow model is never
-- silence.
function P:show_waiting(list)
  local w = list and list[1]
  if not w then return end
  local text = string.format("waiting for %s: %.0f s%s%s", w.model, w.since,
    w.attempts > 1 and string.format(" (attempt %d)", w.attempts) or "", #list > 1 and string.format(", %d calls open", #list) or "")
  if sys.isatty(1) then
    local now = sys.now()
    if now - (self.waiting_drawn or 0) < 0.5 then return end
    self.waiting_drawn = now
    io.stdout:write("\r\27[K" .. self:status_line() .. " | " .. text)
    io.stdout:flush()
  else
    self.waiting_next = self.waiting_next or 30
    if w.since >= self.waiting_next then
      while self.waiting_next <= w.since do self.waiting_next = self.waiting_next * 2 end
      util.eprintf("kloop: %s\n", text)
    end
  end
end

-- "A/B 1.23x [1.20, 1.26] vs #7" (vs the baseline, #0, by name), or nil without an A/B.
function M.ab_text(ab)
  if type(ab) ~= "table" then return nil end
  local vs = ab.vs_baseline and "the baseline" or ("#" .. tostring((ab.vs or 1) - 1))
  if not ab.ratio then return string.format("A/B vs %s: %s", vs, tostring(ab.why)) end
  local ci = ab.ratio_ci or {}
  return string.format("A/B %s [%.2f, %.2f] vs %s", util.fmt_x(ab.ratio), ci[1] or 0 / 0, ci[2] or 0 / 0, vs)
end

-- The note a line ends with: "(best)", "(best: A/B ...)", "(A/B ...: not faster)".
local function best_note(cand)
  local ab = M.ab_text(cand.result.ab)
  if cand.improved then return ab and ("  (best: " .. ab .. ")") or "  (best)" end
  if ab then return "  (" .. ab .. (cand.result.ab.ratio and ": not faster)" or ")") end
  return ""
end

function P:progress(cand)
  if self.opts.quiet then return end
  local tty = sys.isatty(1)
  if tty then io.stdout:write("\r\27[K") end
  local r = cand.result
  local n = #self.history - 1
  local t = r.time_ms and string.format("%9.4f ms", r.time_ms) or string.rep(" ", 12)
  local sp = self:speedup(cand)
  -- with the cascade on, each line says the stage the candidate reached
  local stage = self.opts.cascade == "on" and ("  [" .. (r.stage or "full") .. "]") or ""
  io.stdout:write(string.format("[%3d/%d] %-16s %s %s %s%s%s\n", n, self.opts.budget, r.verdict, t,
    sp and string.format("%6.2fx", sp) or "       ", self:describe(cand), best_note(cand), stage))
  if tty then io.stdout:write(self:status_line()) end
  io.stdout:flush()
end

-- --report FILE: the HTML report (kloop.report.build) rewritten after a settled result
-- when 5 s passed since the last write, and once at the end (final: the store is
-- closed by then, so it is read from its path). A failure is said once; the search goes on.
M.REPORT_EVERY = 5

function P:write_report(final)
  local path = self.opts.report
  if not path or path == "" then return end
  local now = sys.now()
  if not final and self.report_at and now - self.report_at < M.REPORT_EVERY then return end
  self.report_at = now
  local ok, err
  if not self.store or not self.run_id then
    ok, err = nil, "the run is not in a store (--no-store)"
  else
    local db = final and self.store.path or self.store.db
    ok, err = require("kloop.report.build").write(db, { self.run_id }, path)
  end
  if not ok and not self.report_warned then
    self.report_warned = true
    util.eprintf("kloop: --report %s: %s; the search goes on\n", path, tostring(err))
  end
end

-- The promotion's line: "promoted: 1.23x [1.20, 1.26] vs baseline", "refused: why".
function M.promotion_text(p)
  if p.state == "promoted" then
    local ci = p.ratio_ci or {}
    local ratio = p.ratio and string.format("%s [%.2f, %.2f]", util.fmt_x(p.ratio), ci[1] or 0 / 0, ci[2] or 0 / 0) or "-"
    return string.format("promoted: %s vs %s", ratio, p.baseline and "baseline" or tostring(p.incumbent or "the incumbent"))
  end
  local why = tostring(p.reason or "")
  if p.state == "refused" then return "refused: " .. why:gsub("^refused at ", "") end
  if p.state == "none" then return "not promoted: " .. why end
  return "promotion failed: " .. why
end

-- The run's last lines: how it ended, the verdicts, the stages, the baseline and the best.
-- Where the run's wall time went: "time: worker start 3.3 s, compiling 2.1 s, worker
-- 30.2 s (A/B 6.1 s of it), host prep 0.3 s, queueing 0.1 s, propose 0.2 s, ..., other
-- 0.6 s" (the evaluators' account,
-- Evaluator:spend, summed over the workers, and the driver's, Ctx:spend). With several
-- workers their seconds overlap, and no "other" is given. nil when nothing was counted.
function M.time_text(ctx, wall)
  local ev = { start = 0, compile = 0, worker = 0 }
  local evs = ctx.pool and ctx.pool.evs or { ctx.ev }
  local waited, prepared, by = 0, 0, {}
  for _, e in ipairs(evs) do
    for k, v in pairs(e and e.spent or {}) do ev[k] = (ev[k] or 0) + v end
    waited, prepared = waited + (e and e.waited_compiles or 0), prepared + (e and e.prepared or 0)
    for k, v in pairs(e and e.waited_by or {}) do by[k] = (by[k] or 0) + v end
  end
  local d = ctx.spent or {}
  local parts, sum = {}, 0
  local function add(label, v, counted)
    if v and v >= 0.05 then parts[#parts + 1] = string.format("%s %.1f s", label, v) end
    if counted ~= false then sum = sum + (v or 0) end
  end
  add("worker start", ev.start)
  add("compiling", ev.compile)
  if ev.compile >= 0.05 and prepared > 0 then
    local kinds = {}
    for _, k in ipairs({ "compiling", "queued", "not foreseen" }) do
      if (by[k] or 0) > 0 then kinds[#kinds + 1] = string.format("%d %s", by[k], k) end
    end
    parts[#parts] = parts[#parts] .. string.format(" (waited for %d of %d binaries%s)", waited, prepared,
      #kinds > 0 and (": " .. table.concat(kinds, ", ")) or "")
  end
  add("worker", ev.worker)
  if (d.ab or 0) >= 0.05 then parts[#parts] = parts[#parts] .. string.format(" (A/B %.1f s of it)", d.ab) end
  add("host prep", ev.host)
  add("think", ev.think)
  add("queueing", d.queue)
  add("library", d.library)
  add("propose", d.propose)
  add("strategy", d.strategy)
  add("store", d.store)
  add("progress", d.report)
  if #parts == 0 then return nil end
  if #evs > 1 then
    return "time:     " .. table.concat(parts, ", ") .. string.format(" (summed over %d workers)", #evs)
  end
  local other = wall - sum
  if other >= 0.05 then parts[#parts + 1] = string.format("other %.1f s", other) end
  return "time:     " .. table.concat(parts, ", ")
end

function M.summary(ctx, status, reason)
  if not ctx.opts.quiet and sys.isatty(1) then io.stdout:write("\r\27[K") end
  if #ctx.history == 0 then
    -- (a run that failed before its first evaluation has its error message instead)
    if status ~= "interrupted" then return end
    print(string.format("\nrun %s (%s) on %s: no candidate evaluated", status, tostring(reason or ""), ctx.task.name))
    return
  end
  local n = #ctx.history
  local dt = sys.now() - ctx.t0
  print(string.format("\nrun %s (%s) on %s: %d candidates in %.1f s (%.1f/min), seed %s",
    status, tostring(reason or ""), ctx.task.name, n - 1, dt, (n - 1) / math.max(dt, 1e-9) * 60, rng.format(ctx.opts.seed)))
  print("verdicts: " .. ctx:verdict_text())
  local tline = M.time_text(ctx, dt)
  if tline then print(tline) end
  -- (what ran while a batch waited for its compilers: Ctx:evaluate_ready_first)
  if (ctx.pre_seq or 0) > 0 or (ctx.filled_count or 0) > 0 or (ctx.spilled_count or 0) > 0 then
    print(string.format("waits:    %d candidates of a next batch ran while a batch compiled; %d points the strategy"
      .. " offered filled a wait%s", ctx.pre_seq or 0, ctx.filled_count or 0,
      (ctx.spilled_count or 0) > 0 and string.format("; %d still compiling were carried into a next batch",
        ctx.spilled_count) or ""))
  end
  local wline = require("kloop.search.workers").summary(ctx)
  if wline then print(wline) end
  if ctx.opts.cascade == "on" or (ctx.stages.screened or 0) > 0 then
    print(string.format("stages: full %d, screened only %d", ctx.stages.full or 0, ctx.stages.screened or 0))
  end
  local b = ctx.baseline and ctx.baseline.result
  if b and b.time_ms then print(string.format("baseline: %.4f ms", b.time_ms)) end
  if ctx.best then
    local r = ctx.best.result
    print(string.format("best:     %.4f ms (%s)%s  %s", r.time_ms,
      r.tflops and string.format("%.2f TFLOP/s", r.tflops) or "",
      ctx:speedup(ctx.best) and string.format(", %.2fx over the baseline", ctx:speedup(ctx.best)) or "",
      ctx:describe(ctx.best)))
    local ab = M.ab_text(r.ab)
    if ab then print("crowned:  " .. ab) end
    local chain = ctx.pool and ctx:ab_chain(ctx.best)
    if chain then
      -- (several workers: the medians above come from different workers)
      print(string.format("by A/B:   %.2fx over the baseline, the crowning A/B ratios multiplied (each on one worker)",
        chain))
    end
  end
  if ctx.promotion then print(M.promotion_text(ctx.promotion)) end
end

return M
