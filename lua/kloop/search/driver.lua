-- kloop.search.driver: runs a strategy (a table of hooks) on a task: budgets, the evaluation
-- loop, progress, the store, Ctrl-C. Every hook call is protected.
local core = require("kloop.core.ffi")
local util = require("kloop.util")
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local rng = require("kloop.search.rng")
local C = core.C

local M = {}

-- Raised (level 0) to stop a run whose store refused a write; M.run reports the store's words.
M.STORE_STOP = "the store could not record a fact"

-- Exit codes of a strategy run (also in kloop -h and the README): 0 done (the strategy
-- finished or a budget ran out), 1 failed (the strategy raised, no proposal could be
-- had, the store could not record a fact), 2 bad usage, 128 + the signal when
-- interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
M.EXIT = { done = 0, failed = 1, usage = 2, SIGINT = 130, SIGTERM = 143, SIGHUP = 129 }
local SIGNAL_NAMES = { [1] = "SIGHUP", [2] = "SIGINT", [15] = "SIGTERM" }

-- Options every strategy has; a strategy adds its own in `options`: { name, default,
-- help[, type] }. Types: count (a whole number >= 1), uint (a whole number >= 0),
-- seconds and nonneg (a number >= 0), fraction (0 to 1), number, seed, size (bytes or
-- 512k / 1M), string, boolean; without one, the default's value implies it (a whole
-- number >= 1: count, 0: uint, another number: nonneg).
M.common_options = {
  { "budget", 32, "candidates to evaluate (the baseline not counted)", "count" },
  { "time", 0, "wall-clock budget in seconds (0: none)", "seconds" },
  { "tokens", 0, "LLM token budget (0: none)", "uint" },
  { "money", 0, "LLM cost budget in dollars (0: none)", "nonneg" },
  { "seed", 0, "run seed, a whole number (0: drawn at random and recorded)", "seed" },
  { "timing_budget", 1.0, "seconds of timing per candidate", "seconds" },
  { "deadline", 0, "seconds one evaluation may take (0: the task's)", "seconds" },
  { "db", "", "store path (default ./kloop.db, or $KLOOP_DB)" },
  { "resume", 0, "continue stored run N where it stopped (same task and strategy)", "uint" },
  { "force", false, "with --resume: continue a run another strategy made" },
  { "no_store", false, "do not write the run to the store" },
  { "quiet", false, "no progress lines" },
  { "model", "", "LLM model(s), comma-separated for an ensemble (default $KLOOP_MODEL)" },
  { "llm_url", "", "OpenAI-compatible server URL (default $KLOOP_LLM_URL / vendor variables)" },
  { "no_cache", false, "do not answer LLM requests from the response cache" },
  { "temperature", 0.7, "LLM sampling temperature", "nonneg" },
  { "llm_timeout", 0, "seconds a model may think before its reply starts (0: $KLOOP_LLM_TIMEOUT or 600)", "seconds" },
  { "llm_idle_timeout", 0, "seconds a started reply may stall (0: $KLOOP_LLM_IDLE_TIMEOUT or 60)", "seconds" },
  { "llm_connect_timeout", 0, "seconds to connect to the LLM server (0: $KLOOP_LLM_CONNECT_TIMEOUT or 15)", "seconds" },
  { "llm_deadline", 0, "seconds one LLM call may take, retries included (0: $KLOOP_LLM_DEADLINE or 1800)", "seconds" },
  { "llm_max_reply", "", "largest LLM reply accepted, e.g. 512k, 4M (default $KLOOP_LLM_MAX_REPLY or 1M)", "size" },
  { "pipeline", true, "ask the LLM for the next step while the current batch is evaluated" },
  { "pipeline_depth", 0, "LLM requests kept in flight ahead (0: two batches)", "uint" },
  { "profile", "best", "CUPTI-profile verified candidates: best (each new best), all, or none" },
  { "metrics", "", "profiler metrics (a,b,c just those; +a,b added to the defaults)" },
  { "cascade", "off", "screen each candidate first and fully evaluate only those worth it: on or off" },
  { "cascade_margin", 1.5, "cascade: promote a screened candidate within this factor of the best screened time", "nonneg" },
  { "screen_reps", 3, "cascade: timed repetitions of a screen (bench size, no CI target)", "count" },
}

local function all_options(strategy)
  local out, seen = {}, {}
  for _, o in ipairs(strategy.options or {}) do out[#out + 1] = o seen[o[1]] = true end
  for _, o in ipairs(M.common_options) do if not seen[o[1]] then out[#out + 1] = o end end
  return out
end

function M.help(strategy, path)
  local lines = { string.format("%s: %s", strategy.name or path, strategy.description or ""), "",
    string.format("usage: kloop %s TARGET [--option value ...]", path), "", "options:" }
  for _, o in ipairs(all_options(strategy)) do
    lines[#lines + 1] = string.format("  --%-16s %s (default %s)", o[1]:gsub("_", "-"), o[3], tostring(o[2]))
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The type of a declared option (its fourth field, else implied by the default).
function M.option_type(o)
  if o[4] then return o[4] end
  local d = o[2]
  if type(d) == "boolean" then return "boolean" end
  if type(d) ~= "number" then return "string" end
  if d == math.floor(d) and d >= 1 then return "count" end
  if d == 0 then return "uint" end
  if d > 0 then return "nonneg" end
  return "number"
end

local TYPE_WANTS = { count = "a whole number >= 1", uint = "a whole number >= 0", seconds = "seconds (a number >= 0)",
  nonneg = "a number >= 0", fraction = "a number from 0 to 1", number = "a number" }

-- A value given for option o (a string from the command line, or already a value):
-- the converted value, or nil, what it must be.
function M.check_value(o, v)
  local ty = M.option_type(o)
  if ty == "string" then return tostring(v) end
  if ty == "boolean" then
    if v == true or v == "true" or v == "1" then return true end
    if v == false or v == "false" or v == "0" then return false end
    return nil, "give true or false"
  end
  if ty == "size" then
    if v == "" then return "" end
    if not require("kloop.llm.session").parse_size(v) then return nil, "give a size (bytes, or 512k, 1M)" end
    return tostring(v)
  end
  if ty == "seed" then
    local n, why = rng.check(v)
    if not n then return nil, why end
    return n
  end
  local n = tonumber(v)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil, "give " .. (TYPE_WANTS[ty] or "a number") end
  local whole = n == math.floor(n)
  if (ty == "count" and not (whole and n >= 1)) or (ty == "uint" and not (whole and n >= 0))
      or ((ty == "seconds" or ty == "nonneg") and n < 0) or (ty == "fraction" and (n < 0 or n > 1)) then
    return nil, "give " .. TYPE_WANTS[ty]
  end
  return n
end

-- Parses --name value pairs against the declared options; returns opts, target or nil, err.
function M.parse(strategy, args)
  local decl = {}
  for _, o in ipairs(all_options(strategy)) do decl[o[1]] = o end
  local opts, target, given = {}, nil, {}
  for name, o in pairs(decl) do opts[name] = o[2] end
  local i = 1
  while i <= #args do
    local a = args[i]
    local name, inline = a:match("^%-%-([%w%-_]+)=(.*)$")
    name = name or a:match("^%-%-([%w%-_]+)$")
    if name then
      name = name:gsub("%-", "_")
      local o = decl[name]
      if not o then return nil, "unknown option --" .. name:gsub("_", "-") .. " (see: kloop STRATEGY help)" end
      given[name] = true
      if type(o[2]) == "boolean" then
        if inline ~= nil and inline ~= "true" and inline ~= "1" and inline ~= "false" and inline ~= "0" then
          return nil, string.format("--%s=%s: give true or false", name:gsub("_", "-"), inline)
        end
        opts[name] = inline == nil or inline == "true" or inline == "1"
      else
        local v = inline or args[i + 1]
        if v == nil then return nil, "--" .. name .. " needs a value" end
        if not inline then i = i + 1 end
        local cv, why = M.check_value(o, v)
        if cv == nil then return nil, string.format("--%s %s: %s", name:gsub("_", "-"), v, why) end
        opts[name] = cv
      end
    elseif not target then
      target = a
    else
      return nil, "unexpected argument " .. a
    end
    i = i + 1
  end
  return opts, target, given
end

-- Identity of a candidate: its source and parameters (a repeat is not evaluated twice).
function M.key(cand)
  local d = {}
  for _, k in ipairs(util.sorted_keys(cand.defines or {})) do d[#d + 1] = k .. "=" .. tostring(cand.defines[k]) end
  local src = cand.source or ""
  return util.hex64(C.kl_hash64(src, #src, 0)) .. "|" .. table.concat(d, ",")
end

local Ctx = {}
Ctx.__index = Ctx

-- Would result r be a new best over candidate best? Only full evaluations are bests.
function M.is_best_of(r, best)
  return r.verdict == "ok" and r.stage ~= "screened" and r.time_ms ~= nil
    and (not best or r.time_ms < best.result.time_ms)
end

-- What a full result keeps of the screen before it (result.screen).
function M.screen_summary(s)
  return { verdict = s.verdict, time_ms = s.time_ms, reps = s.reps, case = s.screen_case,
    eval_seconds = s.eval_seconds, wall_seconds = s.wall_seconds }
end

-- The cascade (docs/TASKS.md, "Stages"): is a verified screen worth a full evaluation?
-- Screened times are compared with screened times only (both are bench-size medians
-- of a few cold repetitions): within cascade_margin of the fastest screen so far.
function Ctx:worth_full(screen)
  local t = screen.time_ms
  if not t then return false end
  if not self.best_screen or t < self.best_screen then self.best_screen = t end
  return t <= self.opts.cascade_margin * self.best_screen
end

-- Runs the stages for one candidate: the full protocol with the cascade off, for the
-- baseline (screened too, so later screens have a reference) and for a candidate a
-- strategy marks full = true; otherwise a screen, promoted to the full protocol when
-- worth it. The result is the last stage's (result.stage), with result.screen the
-- screen's summary when one ran before a full evaluation.
function Ctx:run_stages(cand)
  local opts = { defines = cand.defines, name = cand.name, timing = { budget = self.opts.timing_budget } }
  if self.opts.cascade ~= "on" or cand.full then return self.ev:evaluate(cand.source, opts) end
  local sopts = { defines = cand.defines, name = cand.name, reps = self.opts.screen_reps }
  local s = self.ev:screen(cand.source, sopts)
  local baseline = cand.proposer == "baseline"
  if C.kl_sigint_pending() > 0 then return s end
  if s.verdict ~= "ok" and not baseline then return s end
  local before = self.best_screen
  local worth = s.verdict == "ok" and self:worth_full(s)
  if not (worth or baseline) then return s end
  local r = self.ev:evaluate(cand.source, opts)
  -- a screen whose full evaluation fails (wrong on a size the screen did not try) is no
  -- reference for later screens: it would keep good candidates from being promoted
  if r.verdict ~= "ok" then self.best_screen = before end
  r.screen = M.screen_summary(s)
  return r
end

-- Evaluates one candidate: {source, defines, parent, proposer, full, ...}; returns result.
-- With the cascade on it may be screened only (result.stage = "screened"): such a result
-- is never the best, never profiled, and counts against the budget like any other.
function Ctx:evaluate(cand)
  -- in the store before it runs: whatever the evaluation does to kloop, the candidate
  -- and its LLM calls are kept, and --resume marks it crashed instead of running it again
  if self.store then self.store:propose(self, cand) end
  local t0 = C.kl_now()
  local r = self:run_stages(cand)
  r.stage = r.stage or "full"
  self.stages = self.stages or {}
  self.stages[r.stage] = (self.stages[r.stage] or 0) + 1
  self.busy = (self.busy or 0) + (C.kl_now() - t0)
  -- Ctrl-C during the evaluation (served inside some pcall on the way): the result may
  -- be the interruption's, not the candidate's; it is not recorded (the stored candidate
  -- without an evaluation in a run that ended interrupted is evaluated again on resume)
  if C.kl_sigint_pending() > 0 then error("interrupted", 0) end
  cand.result = r
  cand.id = #self.history + 1
  self.history[#self.history + 1] = cand
  self:count_verdict(r.verdict)
  return self:settle(cand, r)
end

-- Counts a verdict (and uncounts the one it replaces, if any).
function Ctx:count_verdict(new, old)
  if old then
    self.verdicts[old] = math.max(0, (self.verdicts[old] or 1) - 1)
    if self.verdicts[old] == 0 then self.verdicts[old] = nil end
  end
  self.verdicts[new] = (self.verdicts[new] or 0) + 1
end

-- What follows a candidate's (new) result: the best, the store, the profile, progress.
function Ctx:settle(cand, r)
  if M.is_best_of(r, self.best) then
    self.best = cand
    cand.improved = true
  end
  -- the evaluation, recorded before the profile: one (seconds) cut short by Ctrl-C must
  -- not lose the result
  if self.store then self.store:record(self, cand) end
  -- a fact the store could not keep stops the run (M.run says what was kept)
  if self.store and self.store.failed then error(M.STORE_STOP, 0) end
  local pmode = self.opts.profile
  if r.verdict == "ok" and r.stage ~= "screened" and (pmode == "all" or (pmode == "best" and cand.improved)) then
    self:profile(cand)
  end
  self:progress(cand)
  return r
end

-- A strategy asks for the full protocol on a candidate that was only screened (its
-- screen was outside the margin): the full result replaces cand.result (the screen's
-- summary kept as result.screen), is stored as the candidate's newest evaluation, and
-- may become the best. It does not count against the budget again. Returns the result,
-- or nil, why.
function Ctx:promote(cand)
  local s = cand.result
  if not s then return nil, "not evaluated yet" end
  if s.stage ~= "screened" then return s end
  if s.verdict ~= "ok" then return nil, "its screen failed (" .. s.verdict .. "): the full protocol would not pass" end
  local t0 = C.kl_now()
  local r = self.ev:evaluate(cand.source, { defines = cand.defines, name = cand.name,
    timing = { budget = self.opts.timing_budget } })
  self.busy = (self.busy or 0) + (C.kl_now() - t0)
  if C.kl_sigint_pending() > 0 then error("interrupted", 0) end
  r.stage = "full"
  r.screen = M.screen_summary(s)
  r.promoted = "asked for by the strategy"
  cand.result = r
  self.stages.screened = math.max(0, (self.stages.screened or 1) - 1)
  self.stages.full = (self.stages.full or 0) + 1
  self:count_verdict(r.verdict, "ok")
  return self:settle(cand, r)
end

-- The evaluator's sentinel found its worker untrustworthy and evaluated a candidate
-- again: the result table changed in place. The new evaluation is stored beside the old
-- one, and the verdict counts and the best follow it.
function Ctx:reevaluated(result)
  local cand
  for _, c in ipairs(self.history) do if c.result == result then cand = c break end end
  if not cand then return end
  local prev = result.reevaluated and result.reevaluated.previous or {}
  self:count_verdict(result.verdict, prev.verdict)
  self.best = nil
  for _, c in ipairs(self.history) do
    if M.is_best_of(c.result, self.best) then self.best = c end
  end
  if self.store then self.store:record(self, cand) end
end

-- Profiles a verified candidate with CUPTI (kloop.profile): its summary, also stored
-- as cand.result.profile (and in the store), or nil, why. No counters on this machine:
-- said once, and the summary still has the roofline and the kernel activity.
function Ctx:profile(cand)
  local r = cand.result
  if not r or r.verdict ~= "ok" then return nil, "only verified candidates are profiled" end
  if r.stage == "screened" then return nil, "only fully evaluated candidates are profiled (this one was screened)" end
  if r.profile then return r.profile end
  if self.ev:backend() ~= "cuda" or self.profile_off then return nil, self.profile_off or "profiling needs the cuda backend" end
  local t0 = C.kl_now()
  local p = self.ev:profile(cand.source, { defines = cand.defines, name = cand.name, time_ms = r.time_ms,
    verified = true, metrics = self.opts.metrics ~= "" and self.opts.metrics or nil })
  self.busy = (self.busy or 0) + (C.kl_now() - t0)
  if p.verdict ~= "ok" then
    if p.usage then self.profile_off = p.reason end
    util.eprintf("kloop: profiling %s failed (%s); the run goes on\n", self:describe(cand), tostring(p.reason))
    return nil, p.reason
  end
  r.profile = p.profile
  if p.profile.no_counters and not self.said_no_counters then
    self.said_no_counters = true
    util.eprintf("kloop: no hardware counters here (%s); profiles carry the roofline and kernel activity only\n",
      tostring(p.profile.no_counters))
  end
  if cand.evaluation_store_id and self.store then self.store:record_profile(cand) end
  return r.profile
end

function Ctx:speedup(cand)
  local b = self.baseline and self.baseline.result
  if not (b and b.time_ms and cand.result and cand.result.time_ms) then return nil end
  return b.time_ms / cand.result.time_ms
end

function Ctx:describe(cand)
  local d = {}
  for _, k in ipairs(util.sorted_keys(cand.defines or {})) do d[#d + 1] = k .. "=" .. tostring(cand.defines[k]) end
  return (#d > 0 and table.concat(d, " ") or (cand.label or cand.proposer or ""))
end

-- Pipelining: asks the proposer for children of parent ahead of need, two batches by
-- default (one batch left the H200 idle 24% of the time at 5 s per reply, two 18%:
-- docs/BENCHMARKS.md), never more than `room` (what the budget still needs).
function Ctx:lookahead(parent, batch, room)
  local prop = self.proposer
  if not (prop and prop.prefetch and self.opts.pipeline) or room <= 0 then return end
  local depth = self.opts.pipeline_depth > 0 and self.opts.pipeline_depth or 2 * batch
  prop:prefetch(self, parent, math.min(depth, room))
end

-- "ok 3, wrong 1"
function Ctx:verdict_text()
  local vs = {}
  for _, k in ipairs(util.sorted_keys(self.verdicts)) do vs[#vs + 1] = k .. " " .. self.verdicts[k] end
  return table.concat(vs, ", ")
end

-- On a terminal, a status line stays under the log lines and is redrawn after each.
function Ctx:status_line()
  local n = #self.history - 1
  local dt = C.kl_now() - self.t0
  local best = self.best and self.best.result.time_ms
  local sp = self.best and self:speedup(self.best)
  return string.format("%d/%d | %s | best %s%s | %.1f/min | tokens %d | $%.3f", n, self.opts.budget,
    self:verdict_text(), best and string.format("%.4f ms", best) or "-", sp and string.format(" (%.2fx)", sp) or "",
    n / math.max(dt, 1e-9) * 60, self.tokens or 0, self.cost or 0)
end

-- A reply is awaited: on a terminal the status line says for which model and how
-- long; elsewhere one line at 30 s, 60 s, 120 s, ... (stderr), so a slow model is never
-- silence.
function Ctx:show_waiting(list)
  local w = list and list[1]
  if not w then return end
  local text = string.format("waiting for %s: %.0f s%s%s", w.model, w.since,
    w.attempts > 1 and string.format(" (attempt %d)", w.attempts) or "", #list > 1 and string.format(", %d calls open", #list) or "")
  if C.kl_isatty(1) == 1 then
    local now = C.kl_now()
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

function Ctx:progress(cand)
  if self.opts.quiet then return end
  local tty = C.kl_isatty(1) == 1
  if tty then io.stdout:write("\r\27[K") end
  local r = cand.result
  local n = #self.history - 1
  local t = r.time_ms and string.format("%9.4f ms", r.time_ms) or string.rep(" ", 12)
  local sp = self:speedup(cand)
  -- with the cascade on, each line says the stage the candidate reached
  local stage = self.opts.cascade == "on" and ("  [" .. (r.stage or "full") .. "]") or ""
  io.stdout:write(string.format("[%3d/%d] %-16s %s %s %s%s%s\n", n, self.opts.budget, r.verdict, t,
    sp and string.format("%6.2fx", sp) or "       ", self:describe(cand), cand.improved and "  (best)" or "", stage))
  if tty then io.stdout:write(self:status_line()) end
  io.stdout:flush()
end

-- The first budget that is spent, or nil.
function Ctx:budget_spent()
  local o = self.opts
  if #self.history - 1 >= o.budget then return "candidates" end
  if o.time > 0 and C.kl_now() - self.t0 >= o.time then return "time" end
  if o.tokens > 0 and (self.tokens or 0) >= o.tokens then return "tokens" end
  if o.money > 0 and (self.cost or 0) >= o.money then return "money" end
end

-- Errors raised with a position (bugs) keep their traceback; plain messages raised
-- with level 0 (a strategy explaining itself) are shown as they are.
local function handler(e)
  if type(e) == "string" and e:match("^[^%s:]+:%d+:") then return debug.traceback(e, 2) end
  return tostring(e)
end

local function protected(name, fn, ...)
  if not fn then return true end
  local args, n = { ... }, select("#", ...)
  local ok, err = xpcall(function() return fn(unpack(args, 1, n)) end, handler)
  if not ok then return false, name .. ": " .. tostring(err), err end
  return true, err
end

-- Runs a strategy table on a target. Returns an exit code.
function M.run(strategy, path, args)
  if args[1] == "help" or args[1] == "-h" or args[1] == "--help" then
    io.stdout:write(M.help(strategy, path))
    return 0
  end
  local opts, target, given = M.parse(strategy, args)
  if not opts then util.eprintf("kloop: %s\n", target) return 2 end
  if not target then util.eprintf("kloop: %s needs a TARGET (a task's kernel)\n%s", path, M.help(strategy, path)) return 2 end
  local task, err = taskmod.load(target)
  if not task then util.eprintf("kloop: %s\n", err) return 1 end
  if task.backend == "cuda" and not core.gpu_probe(0) then
    util.eprintf("kloop: no GPU here for %s; try a host task (examples/cpu/*.c)\n", target)
    return 1
  end
  if opts.profile ~= "best" and opts.profile ~= "all" and opts.profile ~= "none" then
    util.eprintf("kloop: --profile %s: give best, all or none\n", tostring(opts.profile))
    return 2
  end
  if opts.cascade ~= "on" and opts.cascade ~= "off" then
    util.eprintf("kloop: --cascade %s: give on or off\n", tostring(opts.cascade))
    return 2
  end
  if opts.metrics ~= "" then
    local _, merr = require("kloop.eval.profile").metric_list(opts.metrics)
    if merr then util.eprintf("kloop: --%s\n", merr) return 2 end
  end
  if opts.seed == 0 then opts.seed = rng.fresh_seed() end
  -- (checked here, not left to the proposer: a bad size must be a usage error)
  if opts.llm_max_reply ~= "" and not require("kloop.llm.session").parse_size(opts.llm_max_reply) then
    util.eprintf("kloop: --llm-max-reply %s: give a size (bytes, or 512k, 1M)\n", opts.llm_max_reply)
    return 2
  end
  local ctx = setmetatable({ task = task, opts = opts, history = {}, verdicts = {}, stages = {}, t0 = C.kl_now(), done_keys = {},
    rng = rng.new(opts.seed), strategy = strategy, path = path, target = target, given = given }, Ctx)
  ctx.ev = eval.new(task, { deadline = opts.deadline > 0 and opts.deadline or nil,
    on_reevaluate = function(result) ctx:reevaluated(result) end,
    log = function(line) if not opts.quiet then util.eprintf("kloop: %s\n", line) end end })
  if not opts.no_store then
    local s, serr = require("kloop.store.run").open(ctx, opts.db ~= "" and opts.db or nil)
    if not s then util.eprintf("kloop: store: %s\n", serr) return 1 end
    ctx.store = s
    ctx.run_id = s.run_id
  end

  local status, reason = "done", nil -- reason: why the run stopped
  -- from here SIGTERM and SIGHUP stop the run like Ctrl-C (kl_lua.c)
  local native = require("kloop.native")
  native.signals_run(true)
  local ok, msg = protected("init", strategy.init, ctx)
  local restored = ctx.store and ctx.store:restored() or {}
  if ok and #restored > 0 then
    -- a resumed run: stored evaluations count against the budget, are never
    -- evaluated again, and the strategy sees them as results
    for _, cand in ipairs(restored) do
      cand.id = #ctx.history + 1
      ctx.history[#ctx.history + 1] = cand
      ctx.done_keys[M.key(cand)] = true
      ctx.verdicts[cand.result.verdict] = (ctx.verdicts[cand.result.verdict] or 0) + 1
      local stage = cand.result.stage or "full"
      ctx.stages[stage] = (ctx.stages[stage] or 0) + 1
      -- the reference of later screens: the stored screens' times, and a full result's screen
      local st = stage == "screened" and cand.result.time_ms or (type(cand.result.screen) == "table" and cand.result.screen.time_ms)
      if cand.result.verdict == "ok" and type(st) == "number" and (not ctx.best_screen or st < ctx.best_screen) then
        ctx.best_screen = st
      end
      if cand.proposer == "baseline" then
        ctx.baseline = cand
      else
        if M.is_best_of(cand.result, ctx.best) then
          ctx.best = cand
        end
        ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result)
        if not ok then break end
      end
    end
  end
  -- stored candidates whose evaluation a clean stop (Ctrl-C) cut short run again (the
  -- baseline as the baseline, the rest after it), before anything new is proposed
  local pending, pending_base = {}, nil
  for _, cand in ipairs(ctx.store and ctx.store:pending() or {}) do
    if cand.proposer == "baseline" then pending_base = pending_base or cand else pending[#pending + 1] = cand end
  end
  if ctx.store and ctx.store.resumed and not ctx.opts.quiet then
    local s = ctx.store
    print(string.format("resumed run %d: %d evaluations restored%s%s", ctx.run_id, #restored - s.crashed,
      s.crashed > 0 and string.format(", %d marked crashed (kloop stopped during their evaluation)", s.crashed) or "",
      #s.rerun > 0 and string.format(", %d interrupted evaluated again", #s.rerun) or ""))
  end
  if ok and not ctx.baseline then
    -- the baseline: the task's own kernel, so every speedup has a reference
    local base = { source = task.source, proposer = "baseline", label = "baseline",
      store_id = pending_base and pending_base.store_id }
    -- pipelining starts here: the model works on the first children while the worker
    -- starts, the reference is computed and the baseline is timed
    ok, msg = protected("prefetch", function()
      ctx:lookahead(base, ctx.opts.batch or ctx.opts.expand or 4, ctx.opts.budget)
    end)
    if ok then ok, msg = protected("baseline", function() ctx:evaluate(base) end) end
    ctx.baseline = base
    if ok and base.result.verdict ~= "ok" then
      util.eprintf("kloop: the task's own kernel fails (%s: %s); speedups are not defined\n",
        base.result.verdict, base.result.reason or "")
    end
  elseif ok and ctx.baseline.result.verdict ~= "ok" then
    util.eprintf("kloop: the task's own kernel failed (%s: %s); speedups are not defined\n",
      ctx.baseline.result.verdict, ctx.baseline.result.reason or "")
  end
  -- the loop itself runs protected too: Ctrl-C can land between two hook calls
  local okloop, lerr = xpcall(function()
  for _, cand in ipairs(pending) do
    if not ok or ctx:budget_spent() then break end
    if C.kl_sigint_pending() > 0 then ok, msg = false, "interrupted" break end
    local key = M.key(cand)
    if not ctx.done_keys[key] then
      ctx.done_keys[key] = true
      ok, msg = protected("evaluate", function() ctx:evaluate(cand) end)
      if ok then ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result) end
    end
  end
  while ok do
    -- the Ctrl-C hook may have fired inside a pcall that swallowed it: the count stays
    if C.kl_sigint_pending() > 0 then ok, msg = false, "interrupted" break end
    local spent = ctx:budget_spent()
    if spent then reason = "budget: " .. spent break end
    local cands
    ok, cands = protected("propose", strategy.propose, ctx)
    if not ok then msg = cands break end
    if not cands or #cands == 0 then reason = "the strategy has nothing more to propose" break end
    -- compile the whole batch in parallel while nothing else needs the CPU
    local real = {}
    for _, c in ipairs(cands) do if not c.skip then real[#real + 1] = c end end
    ok, msg = protected("compile", function() ctx.ev:precompile(real) end)
    if not ok then break end
    -- pipelining: the LLM works on the next step while this batch is evaluated
    local left = ctx.opts.budget - (#ctx.history - 1)
    ok, msg = protected("prefetch", function() ctx:lookahead(ctx.best or ctx.baseline, #real, left - #real) end)
    if not ok then break end
    local prop = ctx.proposer
    for _, cand in ipairs(cands) do
      if ctx:budget_spent() or C.kl_sigint_pending() > 0 then break end
      if prop and prop.pump then prop:pump() end
      local key = not cand.skip and M.key(cand)
      if key and not ctx.done_keys[key] then
        ctx.done_keys[key] = true
        ok, msg = protected("evaluate", function() ctx:evaluate(cand) end)
        if not ok then break end
        ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result)
        if not ok then break end
      end
    end
    -- a strategy that only repeats itself would loop forever
    if #ctx.history == (ctx.seen_len or -1) then
      ctx.stale_batches = (ctx.stale_batches or 0) + 1
      if ctx.stale_batches >= 5 then reason = "the strategy proposes only candidates already evaluated" break end
    else
      ctx.stale_batches = 0
    end
    ctx.seen_len = #ctx.history
    local spent2 = ctx:budget_spent()
    if spent2 and not reason then reason = "budget: " .. spent2 end
  end
  end, handler)
  if not okloop then ok, msg = false, lerr end
  -- closing: from here a signal is only counted (a repeat after a while still ends
  -- kloop), so the done hook, the store and the summary are not cut short
  native.sigint_hold(true)
  local signo = C.kl_sigint_signal()
  if C.kl_sigint_pending() > 0 and ok then ok, msg = false, "interrupted" end
  if not ok then
    if C.kl_sigint_pending() > 0 or tostring(msg):find("interrupted", 1, true) then
      status, reason = "interrupted", signo == 2 and "Ctrl-C" or SIGNAL_NAMES[signo] or "Ctrl-C"
    else
      status, reason = "failed", msg
    end
  elseif reason == "the strategy has nothing more to propose"
      or reason == "the strategy proposes only candidates already evaluated" then
    -- the strategy gave up because its proposals failed: that is no finish
    local st = ctx.llm
    if st and st.streak > 0 then
      status = "failed"
      reason = string.format("no proposal could be had: the last %d proposals failed (%d of %d in the run; last: %s)",
        st.streak, st.failed, st.failed + st.ok, st.last or "?")
    end
  end
  if ctx.store and ctx.store.failed and status ~= "interrupted" then
    status, reason = "failed", "store: " .. ctx.store.failed .. "; the run stops: " .. ctx.store:kept_text()
  end
  M.last_ctx = ctx
  local okd, dmsg = protected("done", strategy.done, ctx)
  -- each closing step on its own, so one failing does not skip the others or the hold
  local okc, cmsg
  if ctx.proposer and ctx.proposer.close then
    -- calls still in flight (sent ahead) are cancelled, and recorded so
    okc, cmsg = pcall(ctx.proposer.close, ctx.proposer)
    if not okc then util.eprintf("kloop: closing the proposer: %s\n", tostring(cmsg)) end
  end
  okc, cmsg = pcall(function() ctx.ev:close() end)
  if not okc then util.eprintf("kloop: closing the worker: %s\n", tostring(cmsg)) end
  if ctx.store then
    local stored
    okc, cmsg = pcall(function() stored = ctx.store:finish(ctx, status, reason) end)
    if not okc then util.eprintf("kloop: store: %s\n", tostring(cmsg)) end
    if (not okc or not stored) and status == "done" then
      status, reason = "failed", "store: " .. tostring(ctx.store.failed or cmsg) .. "; " .. ctx.store:kept_text()
    end
  end
  okc, cmsg = pcall(M.summary, ctx, status, reason)
  if not okc then util.eprintf("kloop: summary: %s\n", tostring(cmsg)) end
  native.sigint_hold(false)
  native.sigint_reset()
  native.signals_run(false)
  if not okd then util.eprintf("kloop: %s\n", dmsg) end
  if status == "failed" then util.eprintf("kloop: %s\n", reason) return M.EXIT.failed end
  if status == "interrupted" then return M.EXIT[reason] or (signo > 0 and 128 + signo) or M.EXIT.SIGINT end
  return M.EXIT.done
end

function M.summary(ctx, status, reason)
  if not ctx.opts.quiet and C.kl_isatty(1) == 1 then io.stdout:write("\r\27[K") end
  if #ctx.history == 0 then
    -- (a run that failed before its first evaluation has its error message instead)
    if status ~= "interrupted" then return end
    print(string.format("\nrun %s (%s) on %s: no candidate evaluated", status, tostring(reason or ""), ctx.task.name))
    return
  end
  local n = #ctx.history
  local dt = C.kl_now() - ctx.t0
  print(string.format("\nrun %s (%s) on %s: %d candidates in %.1f s (%.1f/min), seed %s",
    status, tostring(reason or ""), ctx.task.name, n - 1, dt, (n - 1) / math.max(dt, 1e-9) * 60, rng.format(ctx.opts.seed)))
  print("verdicts: " .. ctx:verdict_text())
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
  end
end

M.Ctx = Ctx -- for tests
return M
