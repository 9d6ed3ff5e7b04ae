-- kloop.search.driver: runs a strategy (a table of hooks) on a task: budgets, the evaluation
-- loop and its stages, the store, Ctrl-C. Every hook call is protected. The strategy's
-- options (kloop.search.options) and what the run shows (kloop.search.progress) are in
-- their own files; their names are re-exported here.
local gpu = require("kloop.core.gpu")
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local rng = require("kloop.search.rng")
local options = require("kloop.search.options")
local progress = require("kloop.search.progress")
local slice = require("kloop.search.slice")

local M = {}

-- Raised (level 0) to stop a run whose store refused a write; M.run reports the store's words.
M.STORE_STOP = "the store could not record a fact"

-- Exit codes of a strategy run (also in kloop -h and the README): 0 done (the strategy
-- finished or a budget ran out), 1 failed (the strategy raised, no proposal could be
-- had, the store could not record a fact), 2 bad usage, 128 + the signal when
-- interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
M.EXIT = { done = 0, failed = 1, usage = 2, SIGINT = 130, SIGTERM = 143, SIGHUP = 129 }
-- The library reference is let go at a compile wait expected to last this long still
-- (its child's steps after its go took 0.32-0.46 s on the H200: the context, the upload,
-- the timed calls), so the wait hides it (the first wait that found it ready, where it
-- ran before, lasted 0.01-0.54 s in round10b's model runs).
M.LIBRARY_WAIT_S = 0.3
local SIGNAL_NAMES = { [1] = "SIGHUP", [2] = "SIGINT", [15] = "SIGTERM" }

M.common_options, M.help, M.option_type, M.check_value, M.parse =
  options.common_options, options.help, options.option_type, options.check_value, options.parse
M.summary = progress.summary

-- Identity of a candidate: its source and parameters (a repeat is not evaluated twice).
function M.key(cand)
  local d = {}
  for _, k in ipairs(util.sorted_keys(cand.defines or {})) do d[#d + 1] = k .. "=" .. tostring(cand.defines[k]) end
  return sys.hex64(sys.hash64(cand.source or "")) .. "|" .. table.concat(d, ",")
end

-- (--crown-gain's default, for a context built without the parsed options: a test's)
local CROWN_GAIN
for _, o in ipairs(options.common_options) do if o[1] == "crown_gain" then CROWN_GAIN = o[2] end end

local Ctx = {}
Ctx.__index = Ctx
for name, fn in pairs(progress.methods) do Ctx[name] = fn end

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
  self:keep_screen(t)
  return t <= self:screen_bound()
end

-- The fastest screen so far becomes the cascade's reference (the caller keeps a
-- screen whose full evaluation failed out of it); screen_bound: what a screen must be
-- within to be promoted (nil before the first).
function Ctx:keep_screen(t)
  if t and (not self.best_screen or t < self.best_screen) then self.best_screen = t end
end
function Ctx:screen_bound() return self.best_screen and self.opts.cascade_margin * self.best_screen end

-- How long the GPU would wait after this evaluation, as far as the compilers tell:
-- where nothing this batch has left (left: indices into list), nothing carried and
-- nothing of the next batch (think's exact list) is compiled yet, the seconds until the
-- first of them is expected to be (ev:wait_left); nil where one is ready, where none of
-- them is known, or with --extend-timing=false. The candidate about to run is then timed up to that
-- long (past its CI target, within --timing-budget: Ctx:run_stages' fill_s), so the GPU spends
-- the wait on a more precise median rather than idle.
function Ctx:fill_seconds(list, left, carry)
  if self.opts.extend_timing == false or not self.ev.wait_left then return nil end
  local rest = {}
  for _, i in ipairs(left) do rest[#rest + 1] = list[i] end
  for _, c in ipairs(carry or {}) do rest[#rest + 1] = c end
  -- (the batch's last candidate: the next batch, where think named it exactly)
  for _, c in ipairs(self:borrowable(self.next_exact)) do rest[#rest + 1] = c end
  if #rest == 0 then return nil end
  local s = self.ev:wait_left(rest)
  return s and s > 0 and s < math.huge and s or nil
end

-- Runs the stages for one candidate: the full protocol with the cascade off, for the
-- baseline (screened too, so later screens have a reference) and for a candidate a
-- strategy marks full = true; otherwise a screen, promoted to the full protocol when
-- worth it. The result is the last stage's (result.stage), with result.screen the
-- screen's summary when one ran before a full evaluation.
-- After the baseline both stages go in one request (ev:cascade): the worker promotes a
-- screen within the margin of the fastest screen so far itself, and the full stage
-- reuses the screen's verified size and timed repetitions.
function Ctx:run_stages(cand, ev, fill_s)
  ev = ev or self.ev
  local opts = { defines = cand.defines, name = cand.name, timing = { budget = self.opts.timing_budget } }
  if fill_s then opts.timing.fill = math.min(fill_s, self.opts.timing_budget or 1) end
  if self.opts.cascade ~= "on" or cand.full then return ev:evaluate(cand.source, opts) end
  local baseline = cand.proposer == "baseline"
  if not baseline and self.best_screen and ev.cascade then
    opts.reps = self.opts.screen_reps
    local r = ev:cascade(cand.source, opts, self:screen_bound())
    local s = r.stage == "full" and r.screen or r
    -- (the fastest screen so far, unless its full evaluation failed)
    if s and s.verdict == "ok" and (r.stage ~= "full" or r.verdict == "ok") then self:keep_screen(s.time_ms) end
    if r.stage == "full" then r.screen = M.screen_summary(s) end
    return r
  end
  local sopts = { defines = cand.defines, name = cand.name, reps = self.opts.screen_reps }
  local s = ev:screen(cand.source, sopts)
  if sys.interrupted() then return s end
  if s.verdict ~= "ok" and not baseline then return s end
  local before = self.best_screen
  local worth = s.verdict == "ok" and self:worth_full(s)
  if not (worth or baseline) then return s end
  local r = ev:evaluate(cand.source, opts)
  -- a screen whose full evaluation fails (wrong on a size the screen did not try) is no
  -- reference for later screens: it would keep good candidates from being promoted
  if r.verdict ~= "ok" then self.best_screen = before end
  r.screen = M.screen_summary(s)
  return r
end

-- Evaluates one candidate: {source, defines, parent, proposer, full, ...}; returns result.
-- With the cascade on it may be screened only (result.stage = "screened"): such a result
-- is never the best, never profiled, and counts against the budget like any other.
-- done: the result of an evaluation already run (by the pool: kloop.search.pool), which
-- was stored as proposed when it started.
function Ctx:evaluate(cand, done)
  -- in the store before it runs: whatever the evaluation does to kloop, the candidate
  -- and its LLM calls are kept, and --resume marks it crashed instead of running it again
  if self.store and not done then self.store:propose(self, cand) end
  local t0 = sys.now()
  local r = done or self:run_stages(cand)
  -- a compile cache that cannot keep binaries fails every candidate the same way: the
  -- run stops and says so (the candidate stays proposed: --resume evaluates it)
  if r.cache_error then error(tostring(r.reason), 0) end
  r.stage = r.stage or "full"
  self.stages = self.stages or {}
  self.stages[r.stage] = (self.stages[r.stage] or 0) + 1
  self.busy = (self.busy or 0) + (done and (r.wall_seconds or 0) or (sys.now() - t0))
  -- Ctrl-C during the evaluation (served inside some pcall on the way): the result may
  -- be the interruption's, not the candidate's; it is not recorded (the stored candidate
  -- without an evaluation in a run that ended interrupted is evaluated again on resume)
  sys.check_interrupt()
  cand.result = r
  cand.id = #self.history + 1
  self.history[#self.history + 1] = cand
  self:count_verdict(r.verdict)
  return self:settle(cand, r)
end

-- The compile cache's failure an evaluator met (Evaluator:prepare's cache_failed), or nil.
function Ctx:cache_failure()
  for _, e in ipairs(self.pool and self.pool.evs or { self.ev }) do
    if type(e) == "table" and e.cache_failed then return e.cache_failed end
  end
end

-- Counts a verdict (and uncounts the one it replaces, if any).
function Ctx:count_verdict(new, old)
  if old then
    self.verdicts[old] = math.max(0, (self.verdicts[old] or 1) - 1)
    if self.verdicts[old] == 0 then self.verdicts[old] = nil end
  end
  self.verdicts[new] = (self.verdicts[new] or 0) + 1
end

-- The A/B that crowns a best: a candidate whose median beats the best's is timed again,
-- interleaved with the best (ev:compare, ABBA blocks), and is the new best only if that
-- A/B says it is faster: best/candidate above 1 with the lower bound of its 95% CI above
-- 1 + opts.crown_gain (0.5% by default: a 95% CI misses 1 in about one A/B of a kernel
-- against itself in 50, both sides, so a search of many A/Bs of near-copies would crown
-- noise). A median timed at another moment never decides; the first crowning over the
-- baseline re-times the baseline. The A/B is kept on the result (result.ab, stored with
-- the evaluation). Returns true when it confirms.
function Ctx:crown_ab(cand, r)
  local best = self.best
  -- the same machine code, launched the same way, as the best (a comment, a renamed
  -- local): an A/B could only measure noise, or where each copy landed in memory
  if r.code_id and best.result and r.code_id == best.result.code_id then
    r.ab = { vs = best.id, vs_store_id = best.store_id, vs_baseline = best.proposer == "baseline" or nil,
      faster = false, same_code = true,
      why = "the same machine code and launch as the best (only the source text differs): no A/B" }
    return false
  end
  local t0 = sys.now()
  local c = self.ev:compare(best.source, cand.source, { defines_a = best.defines, defines_b = cand.defines,
    timing = { budget = 2 * self.opts.timing_budget } })
  self.busy = (self.busy or 0) + (sys.now() - t0)
  self:spend("ab", t0)
  sys.check_interrupt()
  local ab = { vs = best.id, vs_store_id = best.store_id, vs_baseline = best.proposer == "baseline" or nil }
  if c.ratio and c.ratio_ci then
    ab.ratio, ab.ratio_ci, ab.blocks, ab.order = c.ratio, c.ratio_ci, c.blocks, c.order
    ab.best_ms, ab.candidate_ms = c.a.time_ms, c.b.time_ms
    -- (faster by more than the noise of an A/B of a kernel against itself: --crown-gain)
    local gain = tonumber(self.opts.crown_gain) or CROWN_GAIN
    ab.faster = c.ratio_ci[1] > 1 + gain
    ab.gain = gain > 0 and gain or nil
    if not ab.faster then
      ab.why = gain > 0 and c.ratio_ci[1] > 1
        and string.format("not more than %.2g%% faster in an A/B against the best (--crown-gain)", 100 * gain)
        or "not faster in an A/B against the best"
    end
  else
    local side = (c.b and c.b.verdict ~= "ok") and c.b or c.a or {}
    ab.faster = false
    ab.why = string.format("the A/B did not run to the end (%s: %s)", tostring(side.verdict), tostring(side.reason))
  end
  r.ab = ab
  return ab.faster
end

-- The best after a change of results (a resume, the sentinel's re-evaluation): the
-- last candidate crowned (cand.improved: the first verified one, then each an A/B
-- confirmed) whose result is still a verified full one. A run stored before crowning
-- by A/B (no result says crowned) keeps its bests by median.
function Ctx:recompute_best()
  local legacy = true
  for _, c in ipairs(self.history) do
    if c.result and c.result.crowned ~= nil then legacy = false break end
  end
  self.best = nil
  for _, c in ipairs(self.history) do
    local r = c.result
    if legacy and M.is_best_of(r, self.best) then self.best = c
    elseif not legacy and (c.improved or r.crowned == true) and M.is_best_of(r, nil) then self.best = c end
  end
end

-- What follows a candidate's (new) result: the best (by A/B: crown_ab), the store, the
-- profile, progress.
function Ctx:settle(cand, r)
  if M.is_best_of(r, self.best) and (not self.best or self:crown_ab(cand, r)) then
    self.best = cand
    cand.improved = true
  end
  if cand.improved then r.crowned = true elseif r.ab then r.crowned = false end
  -- the evaluation, recorded before the profile: one (seconds) cut short by Ctrl-C must
  -- not lose the result
  local ts = sys.now()
  if self.store then self.store:record(self, cand) end
  self:spend("store", ts)
  -- a fact the store could not keep stops the run (M.run says what was kept)
  if self.store and self.store.failed then error(M.STORE_STOP, 0) end
  local pmode = self.opts.profile
  if r.verdict == "ok" and r.stage ~= "screened" and (pmode == "all" or (pmode == "best" and cand.improved)) then
    self:profile(cand)
  end
  -- and so does a compile cache that could not keep a binary, met on any path (an A/B,
  -- the profile)
  local cf = self:cache_failure()
  if cf then error(cf, 0) end
  ts = sys.now()
  self:progress(cand)
  self:write_report(false)
  self:spend("report", ts)
  return r
end

-- Where the run's wall time went, besides the evaluators' own account (Evaluator:spend):
-- propose, strategy (on_result), ab (the crowning A/Bs), store, report (progress lines
-- and --report), queue (compiles queued, the ready-first order); kloop.search.progress
-- prints both.
function Ctx:spend(what, t0)
  self.spent = self.spent or {}
  self.spent[what] = (self.spent[what] or 0) + (sys.now() - t0)
end

-- The task's library reference (kloop.eval.library.at_start), measured now, its time
-- counted as library: a failure is said in one line and the search goes on; Ctrl-C
-- still stops the run.
function Ctx:measure_library()
  local tl = sys.now()
  local ok, err = pcall(require("kloop.eval.library").at_start, self)
  self:spend("library", tl)
  if not ok then
    if sys.is_interrupt(err) then error(err, 0) end
    util.eprintf("kloop: library: %s; the search goes on\n", tostring(err))
  end
end

-- The evaluator's idle job (a compile wait, the GPU idle; left: the seconds the wait
-- is expected to last still): the library reference measured now where the wait is
-- expected to hide it (M.LIBRARY_WAIT_S or more), or at any wait of the search's last
-- batch (its last chance before the end, where nothing hides it), once its child is
-- ready. Returns whether it ran.
function Ctx:library_idle(left)
  if not self.last_batch and (left or math.huge) < M.LIBRARY_WAIT_S then return false end
  if not (self.library_child and require("kloop.eval.library").is_ready(self.library_child)) then return false end
  eval.waits_log(string.format("library_go left %.3f last_batch %s", left or -1, tostring(self.last_batch or false)))
  self:measure_library()
  return true
end

-- At the run's end, the worker closed: the library reference that no compile wait
-- measured, where the run is done; an interrupted or failed run says it was not
-- measured, and its child goes (the one place a begun child that never timed is dropped).
function Ctx:end_library(status)
  if not self.library_child then return end
  self.ev.idle_job = nil
  local why = status ~= "done" and (status == "interrupted" and "the run was interrupted before it"
    or "the run failed before it")
  if not why then
    local ok, err = pcall(self.measure_library, self) -- (only an interrupt is raised)
    why = not ok and tostring(err)
  end
  if why then
    require("kloop.eval.library").abandon(self.library_child)
    self.library_child = nil
    util.eprintf("kloop: library: %s not measured (%s)\n", self.task.library.name, why)
  end
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
  local t0 = sys.now()
  local r = self.ev:evaluate(cand.source, { defines = cand.defines, name = cand.name,
    timing = { budget = self.opts.timing_budget } })
  self.busy = (self.busy or 0) + (sys.now() - t0)
  sys.check_interrupt()
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
  if cand.improved then result.crowned = true end
  self:recompute_best()
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
  local t0 = sys.now()
  local p = self.ev:profile(cand.source, { defines = cand.defines, name = cand.name, time_ms = r.time_ms,
    verified = true, metrics = self.opts.metrics ~= "" and self.opts.metrics or nil })
  self.busy = (self.busy or 0) + (sys.now() - t0)
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

-- At the end of a finished search (--promote auto): a best that is not the baseline
-- goes through kloop.eval.promote (the canary between a search's winner and a
-- codebase). The outcome is ctx.promotion ({state, reason, ratio, ratio_ci, ...}),
-- shown by the summary; whatever it is, the run's status and exit code stay.
function Ctx:promote_best()
  local best = self.best
  if not best or best == self.baseline or best.proposer == "baseline" then
    self.promotion = { state = "none", reason = "the best is the baseline" }
    return
  end
  if not (self.store and best.store_id) then
    self.promotion = { state = "none", reason = "the run is not in a store (--no-store)" }
    return
  end
  local promote = require("kloop.eval.promote")
  local o = self.opts
  local ok, res, err = pcall(promote.run, self.store.db, best.store_id, { task = self.task, quiet = o.quiet,
    evaluator_opts = { deadline = o.deadline > 0 and o.deadline or nil } })
  if not ok then
    res = { state = "failed", reason = sys.is_interrupt(res) and "interrupted" or tostring(res) }
  elseif not res then
    res = { state = "failed", reason = tostring(err) }
  end
  res.baseline = self.baseline and res.incumbent_id ~= nil and res.incumbent_id == self.baseline.store_id
  self.promotion = res
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

-- Compiling ahead: the candidates the strategy expects to propose next
-- (strategy.upcoming(ctx, n), optional; no side effects) compile in the background
-- behind this batch, so the next batch's binaries are ready, or nearly, when it comes
-- and the GPU does not wait for NVRTC between batches. A guess that misses costs idle
-- CPU only (and is cached if proposed later). At most as many as the compilers that run
-- at once, and never more than the budget still needs.
function Ctx:compile_ahead(strategy, nbatch)
  local tp = sys.now()
  local real = self:upcoming_list(strategy, nbatch)
  self:spend("propose", tp)
  eval.waits_log(string.format("ahead %d after %d, ready %s", #real, nbatch or 0, tostring(self.ev.ready)))
  if #real > 0 then self:queue_precompile(real) end
end

-- What strategy.upcoming foresees past nbatch more candidates, worth compiling
-- (Ctx:foreseen), at most as many as the compilers at once and the budget's room; {}
-- when the strategy foresees nothing or compiling ahead is off. named (optional): the
-- batch think chose, queued already, which upcoming names first (what propose gives
-- next): asked past it, so the compilers' worth of guesses is past that batch. (Counted
-- with it, a batch of 12 left 4 guesses: bench/search_sim.lua with LEAD_DEPTH, gemm_tiled
-- model 100, 4 seeds: the guess made a batch before the choice named 10% of the picks
-- with 4, 36% with 16, so a pick's compile starts a batch earlier.)
function Ctx:upcoming_list(strategy, nbatch, named)
  if not strategy.upcoming or self.opts.compile_ahead == false then return {} end
  local n = math.min(self:room_after(nbatch), require("kloop.eval.compile").default_parallel)
  if n <= 0 then return {} end
  local skip = {}
  for _, c in ipairs(named or {}) do skip[M.key(c)] = true end
  local up = strategy.upcoming(self, n + #(named or {}))
  if type(up) ~= "table" then return {} end
  local past = {}
  for _, c in ipairs(up) do
    if type(c) ~= "table" or not skip[M.key(c)] then past[#past + 1] = c end
  end
  return self:foreseen(past, n)
end

-- ev:precompile(cands, urgent), its time counted as "queue" (less the worker's start
-- it may include: the evaluator counts that one).
function Ctx:queue_precompile(cands, urgent)
  local ev = self.ev
  local t0, s0 = sys.now(), ev.spent and ev.spent.start or 0
  ev:precompile(cands, urgent)
  self:spend("queue", t0)
  self.spent.queue = self.spent.queue - ((ev.spent and ev.spent.start or 0) - s0)
end

-- Candidates the budget still has room for once nbatch more are evaluated (those carried
-- from a spilled batch count as taken; strategies read it too: strategies/tune.lua).
function Ctx:room_after(nbatch)
  return self.opts.budget - (#self.history - 1) - #(self.carried or {}) - (nbatch or 0)
end

-- Of what a strategy foresees (upcoming, think), up to n candidates worth compiling:
-- tables, not skipped, not evaluated already.
function Ctx:foreseen(list, n)
  local real = {}
  if type(list) ~= "table" then return real end
  for _, c in ipairs(list) do
    if #real >= n then break end
    if type(c) == "table" and not c.skip and not self.done_keys[M.key(c)] then real[#real + 1] = c end
  end
  return real
end

-- Arms the evaluator's one-shot hook (kloop.eval.worker_client W:request) with the
-- strategy's optional think(ctx): work for while the worker runs the batch's first
-- candidate, with no results of the batch in yet (strategy.think must give the same
-- search whether it runs or not). Candidates it returns compile at once. One worker
-- only (a pool serves several at a time); an error stops the run after the batch.
-- When think chose something, the strategy's upcoming (its guess past that choice)
-- is queued too, as guesses.
function Ctx:arm_think(strategy, nbatch)
  self.ev.on_sent = nil
  self.next_exact, self.next_spare, self.next_spill = nil, nil, nil
  if not strategy.think or self.pool then return end
  self.ev.on_sent = function()
    local t_think = sys.now()
    local ok, got = xpcall(function() return strategy.think(self) end, function(e)
      if sys.is_interrupt(e) then return e end
      return debug.traceback(e, 2)
    end)
    if not ok then
      self.think_error = sys.is_interrupt(got) and got or ("think: " .. tostring(got))
      return
    end
    -- (benches: its wall time; sliced, the requests between its slices included)
    eval.waits_log(string.format("think %.3f", sys.now() - t_think))
    if not self.ev.arch then return end
    -- (no more than the budget has room for after this batch)
    local list = self:foreseen(got, self:room_after(nbatch))
    -- (got.exact: the strategy's next propose returns exactly these first, so one whose
    -- binary is ready may run while this batch's last ones still compile: Ctx:borrowable)
    if type(got) == "table" and got.exact == true and #list > 0 and not self.exact_broken then
      self.next_exact = list
      -- (got.spill: a candidate of this batch still compiling, when all of the next has
      -- run and nothing else can, may be carried into the next batch: Ctx:spill_ok)
      self.next_spill = got.spill == true or nil
      -- (got.spare: what the strategy would have run while this batch waits for its
      -- compilers and nothing of the next is ready: Ctx:spares)
      if type(got.spare) == "table" then
        local named = {}
        for _, c in ipairs(list) do named[M.key(c)] = true end
        local spare = {}
        for _, c in ipairs(self:foreseen(got.spare, #got.spare)) do
          if not named[M.key(c)] then spare[#spare + 1] = c end
        end
        -- (spare.max: at most so many of them run in this batch's waits)
        local max = tonumber(got.spare.max)
        spare.max = max and math.max(0, math.floor(max)) or #spare
        if #spare > 0 and spare.max > 0 then self.next_spare = spare end
      end
    end
    if #list > 0 then
      pcall(self.ev.queue_compiles, self.ev, list, true)
      -- and what the strategy now expects after that batch (its guess, remade by the
      -- choice) compiles from here, a batch earlier than the next propose would ask
      -- (an error is left for that propose's own compile_ahead to raise; the time is
      -- the worker's or think's, where this hook runs)
      local oku, real = pcall(self.upcoming_list, self, strategy, (nbatch or 0) + #list, list)
      if oku and #real > 0 then pcall(self.ev.queue_compiles, self.ev, real) end
    end
  end
end

-- The batch's fresh candidates: not skipped, not evaluated before, not twice, and no
-- more than the budget still takes (done_keys is not marked here).
function Ctx:fresh_batch(cands)
  local room = self:room_after(0)
  local list, seen = {}, {}
  for _, cand in ipairs(cands) do
    local key = not cand.skip and M.key(cand)
    if key and not self.done_keys[key] and not seen[key] and #list < room then
      seen[key] = true
      list[#list + 1] = cand
    end
  end
  return list
end

-- What follows a batch's evaluations (one worker's, reordered, or the pool's): each
-- result (results[i] for list[i]; a candidate left unevaluated has none) settled (the
-- best, the store, the progress line) and given to the strategy, in proposal order.
-- Returns ok, msg like the driver's steps.
function Ctx:settle_batch(list, results, strategy, protected)
  for i, cand in ipairs(list) do
    local r = results[i]
    if r then
      local ok, msg = protected("evaluate", function() self:evaluate(cand, r) end)
      if not ok then return false, msg end
      local tr = sys.now()
      ok, msg = protected("on_result", strategy.on_result, self, cand, cand.result)
      self:spend("strategy", tr)
      if not ok then return false, msg end
    end
  end
  return true
end

-- Whether a sliced think (kloop.search.slice) began in a request and is not done yet.
local function thinking(ev) return ev.think_job ~= nil and not ev.think_job.done end

-- One worker: the order of preference to run a batch's fresh candidates in (indices
-- into list) when some are still compiling: the compiled first, in proposal order, then
-- the rest (Ctx:evaluate_ready_first then takes, at each step, the first of them whose
-- binaries are ready, waiting for whichever finishes first, or runs what the
-- strategy's think offers meanwhile). nil when all are compiled, or when nothing could
-- move and the strategy has no think to offer anything (one candidate, or only the
-- last one compiling).
function Ctx:ready_order(list, thinks)
  local order, later = {}, {}
  for i, cand in ipairs(list) do
    if self.ev:compiled(cand) then order[#order + 1] = i else later[#later + 1] = i end
  end
  if #later == 0 then return nil end
  if not thinks and (#list < 2 or (#later == 1 and later[1] == #list)) then return nil end
  for _, i in ipairs(later) do order[#order + 1] = i end
  return order
end

-- Runs list in `order` (Ctx:ready_order; at each step the first candidate of it whose
-- binaries are ready, by ev:first_ready where the evaluator has it), then settles the
-- results in proposal order, as if they had run in it: the same seed gives the same
-- candidates, bests and records whatever the compilers' timing. (Not with the cascade:
-- which screen is worth a full evaluation depends on the screens before it.) A
-- candidate left unevaluated (a budget, Ctrl-C) is not settled; Ctrl-C keeps the stored
-- proposals, which --resume runs, and the results that ran but had not settled (stored
-- unsettled), which --resume settles.
function Ctx:evaluate_ready_first(list, order, strategy, protected)
  for _, cand in ipairs(list) do self.done_keys[M.key(cand)] = true end
  local prop = self.proposer
  local results = {}
  local left = {}
  -- (what ran ahead while the batch before waited for its compilers: Ctx:borrowable;
  -- the candidate was stored when it ran)
  local pre = self.pre or {}
  self.pre = {}
  for _, i in ipairs(order) do
    local key = M.key(list[i])
    local p = pre[key]
    if p then
      results[i] = p.result
      list[i].store_id = list[i].store_id or p.cand.store_id
      list[i].provisional_eid = list[i].provisional_eid or p.cand.provisional_eid
      pre[key] = nil
    else
      left[#left + 1] = i
    end
  end
  -- The results settle in proposal order as soon as they can: list[1..settled] are
  -- settled, each once the ones before it are (not before the strategy's think has
  -- fired: it must see no result of the batch), so a kill loses little.
  local settled, serr = 0, nil
  -- (think must run before any result of the batch reaches the strategy: where no
  -- request of the loop fires it, all results claimed or refused before a request, it
  -- runs here)
  local function fire_think() self.ev:fire_think() end
  if #left == 0 then fire_think() end
  local function settle_ready()
    if self.ev.on_sent or thinking(self.ev) then return true end
    while settled < #list and results[settled + 1] do
      settled = settled + 1
      local oks, smsg = self:settle_batch({ list[settled] }, { results[settled] }, strategy, protected)
      if not oks then return false, smsg end
    end
    return true
  end
  -- (what ran to fill a wait, from think's spare list: settled after the batch)
  local filled, filled_results = {}, {}
  -- (carry: candidates of a batch before, still compiling when it spilled (Ctx:spill_ok),
  -- run here when ready and settled after this batch, as fills are; self.carried is the
  -- same list, so the budget's room counts them until they run)
  local carry = self.carried or {}
  self.carried = carry
  local carried_done, carried_results = {}, {}
  local base = #self.history - 1 + #list + #carry
  -- (no room after this batch: its waits are the search's last)
  self.last_batch = self.opts.budget - base <= 0
  local ok, msg = protected("evaluate", function()
    while #left > 0 or #carry > 0 do
      local sok, smsg = settle_ready()
      eval.waits_log("settled") -- (benches: bench/request_gaps.py)
      if not sok then serr = smsg return end
      if self:budget_spent() or sys.interrupted() then break end
      if prop and prop.pump then prop:pump() end
      local k, cl, nexts = 1, nil, 0
      local nl = #left + #carry
      if self.ev.first_ready then
        cl = {}
        for j, i in ipairs(left) do cl[j] = list[i] end
        for _, c in ipairs(carry) do cl[#cl + 1] = c end
        k = self.ev:first_ready(cl, function()
          -- (every candidate left compiles: a wait, where think fires anyway; what it
          -- names, the next batch and its spares, may fill this very wait)
          fire_think()
          local more = self:borrowable(self.next_exact)
          nexts = #more
          for _, c in ipairs(self:spares(base + #filled, #filled)) do more[#more + 1] = c end
          -- (benches: what a wait could take meanwhile, and why no more)
          if eval.waits_logging then
            eval.waits_log(string.format("more next %d of %d, spares %d of %d (max %s, filled %d, room %d)", nexts,
              #(self.next_exact or {}), #more - nexts, #(self.next_spare or {}),
              tostring(self.next_spare and self.next_spare.max), #filled,
              self.opts.budget - (base + #filled) - #(self.next_exact or {})))
          end
          return more
        end, function(waited) return self:spill_ok(waited, base + #filled) end)
      end
      if not k then
        -- nothing can run while this batch's last candidates compile, and all of the next
        -- batch has run: they are carried into the next batch, and the strategy proposes
        for _, i2 in ipairs(left) do carry[#carry + 1] = list[i2] end
        eval.waits_log(string.format("spilled %d, carried %d", #left, #carry))
        self.spilled_count = (self.spilled_count or 0) + #left
        left = {}
        break
      end
      local cand, i, spare, carried
      if k > nl + nexts then
        -- nothing of this batch or the next is ready: a point the strategy offered to
        -- fill such a wait runs now, as its own candidate, settled after the batch
        cand, spare = cl[k], true
        self.done_keys[M.key(cand)] = true
      elseif k > nl then
        -- every candidate of this batch still compiles: one of the next batch, which the
        -- strategy named exactly (think), runs now; its batch takes the result
        cand = cl[k]
      elseif k > #left then
        -- a candidate carried from a batch before, its binary ready
        cand, carried = table.remove(carry, k - #left), true
      else
        i = table.remove(left, k)
        cand = list[i]
      end
      eval.waits_log("chosen")
      if self.store then self.store:propose(self, cand) end
      eval.waits_log("stored")
      local t0 = sys.now()
      local r = self:run_stages(cand, nil, self:fill_seconds(list, left, carry))
      r.wall_seconds = r.wall_seconds or (sys.now() - t0)
      -- (kept with the evaluation: it ran to fill a wait, offered by think)
      if spare then r.filled = true end
      -- (a result that will wait for others before it settles is kept now: a kill
      -- meanwhile must not make it a crash on --resume, which settles it then. Not one
      -- Ctrl-C may have cut, nor kloop's own failure: that candidate stays proposed and
      -- --resume evaluates it again)
      local next_up = i and i == settled + 1 and not self.ev.on_sent and not thinking(self.ev)
      if self.store and self.store.record_provisional and not sys.interrupted() and not next_up
          and not r.cache_error and not r.infrastructure then
        self.store:record_provisional(self, cand, r)
      end
      if i then results[i] = r
      elseif carried then
        carried_done[#carried_done + 1], carried_results[#carried_done + 1] = cand, r
      elseif spare then
        self.filled_count = (self.filled_count or 0) + 1
        filled[#filled + 1], filled_results[#filled + 1] = cand, r
      else
        self.pre_seq = (self.pre_seq or 0) + 1
        self.pre[M.key(cand)] = { cand = cand, result = r, seq = self.pre_seq }
      end
      sys.check_interrupt()
    end
  end)
  if serr then return false, serr end
  -- Ctrl-C: nothing more runs (no A/B); the stored proposals are run again on --resume,
  -- the results stored unsettled are settled then
  if not ok and sys.is_interrupt(msg) then return ok, msg end
  fire_think()
  -- what ran is settled, even when a budget stopped the loop above; then what ran ahead
  -- for this batch that it did not claim (Ctx:claim_pre settles those before a batch)
  local rest_list, rest = {}, {}
  for i = settled + 1, #list do
    if results[i] then rest_list[#rest_list + 1], rest[#rest_list + 1] = list[i], results[i] end
  end
  local oks, smsg = self:settle_batch(rest_list, rest, strategy, protected)
  if not oks then return false, smsg end
  oks, smsg = self:settle_batch(filled, filled_results, strategy, protected)
  if not oks then return false, smsg end
  oks, smsg = self:settle_batch(carried_done, carried_results, strategy, protected)
  if not oks then return false, smsg end
  oks, smsg = self:settle_pre(pre, strategy, protected)
  if not oks then return false, smsg end
  return ok, msg
end

-- Before a batch: results run ahead that this batch does not propose (a strategy whose
-- think said exact and whose propose then differed) are settled first, in the order
-- they ran, so they count against the budget before the batch is cut to it; no more
-- runs ahead in this run, and the user is told once. Returns ok, msg.
function Ctx:claim_pre(cands, strategy, protected)
  -- (claimed: among the candidates the batch will take, cut to the budget's room; the
  -- room shrinks as unclaimed ones settle, so until nothing more is unclaimed)
  while self.pre and next(self.pre) do
    local named = {}
    for _, c in ipairs(self:fresh_batch(cands or {})) do named[M.key(c)] = true end
    local unclaimed = {}
    for key, p in pairs(self.pre) do
      if not named[key] then unclaimed[key] = p self.pre[key] = nil end
    end
    if not next(unclaimed) then return true end
    if not self.exact_broken and not self.opts.quiet then
      util.eprintf("kloop: the strategy's think named its next batch exactly (exact = true), but propose gave another;"
        .. " the candidates run ahead are kept, and none runs ahead from here\n")
    end
    self.exact_broken = true
    local ok, msg = self:settle_pre(unclaimed, strategy, protected)
    if not ok then return ok, msg end
  end
  return true
end

-- Of list, up to n candidates that may run out of their turn: not run yet, not
-- evaluated, their binaries all compiled or all compiling (never one that would
-- compile in the foreground). ready_first: those compiled already first, in list order,
-- then those still compiling, then those that will not run (a failed compile, a source
-- refused), so what fills a wait can run on the GPU now.
function Ctx:runnable(list, n, ready_first)
  local out, compiling, failing = {}, {}, {}
  for _, c in ipairs(list) do
    if #out >= n and not ready_first then break end
    local key = M.key(c)
    if not self.pre[key] and not self.done_keys[key] then
      local ready, pending, none, failed = self.ev:compile_counts(c)
      if none == 0 and (pending == 0 or ready == 0) then
        local t = ready_first and ((pending > 0 and compiling) or ((ready == 0 or (failed or 0) > 0) and failing)) or out
        t[#t + 1] = c
      end
    end
  end
  for _, t in ipairs({ compiling, failing }) do
    for _, c in ipairs(t) do out[#out + 1] = c end
  end
  for i = #out, n + 1, -1 do out[i] = nil end
  return out
end

-- Of the next batch the strategy named exactly (think's list with exact = true), the
-- candidates that may run ahead (Ctx:runnable), within the budget's room after this
-- batch (think's list is cut to it).
function Ctx:borrowable(next_exact)
  if not next_exact or (self.opts.time or 0) > 0 then return {} end
  return self:runnable(next_exact, #next_exact)
end

-- Of the points think offered to fill a wait (its list's spare field, cut to the
-- foreseen ones and to none of its batch), those that may run now (Ctx:runnable, the
-- compiled ones first),
-- within the budget's room once this batch and the next are evaluated (used: the
-- candidates those and the spares run so far take) and within spare.max (taken: the
-- spares run in this batch so far). Nothing with a time budget, or once the strategy's
-- exact promise broke.
function Ctx:spares(used, taken)
  if not self.next_spare or self.exact_broken or (self.opts.time or 0) > 0 then return {} end
  local room = math.min(self.opts.budget - used - #(self.next_exact or {}), self.next_spare.max - (taken or 0))
  if room <= 0 then return {} end
  return self:runnable(self.next_spare, room, true)
end

-- Whether a batch's wait (waited seconds so far) may end with its candidates still
-- compiling carried into the next batch (a spill): the strategy offered it (think's
-- list with spill = true, the next batch named exactly), the wait has lasted
-- M.SPILL_AFTER_S, every candidate of the next batch has run, and the budget has room
-- for a batch past it (used: the candidates this batch, those carried and the fills
-- take). Then the strategy proposes on with them pending, and the GPU runs what comes
-- next instead of waiting for one heavy compile (gemm_tiled on the H200: 0.8-1.1 s for a
-- random start's BK=32 TM=16 TN=8 point, with all else run).
M.SPILL_AFTER_S = 0.05
function Ctx:spill_ok(waited, used)
  if not self.next_spill or self.exact_broken or waited < M.SPILL_AFTER_S then return false end
  local nx = self.next_exact
  if not nx or #nx == 0 then return false end
  for _, c in ipairs(nx) do
    local key = M.key(c)
    if not self.pre[key] and not self.done_keys[key] then return false end
  end
  return self.opts.budget - used - #nx > 0
end

-- Candidates carried from a spilled batch (Ctx:spill_ok), run now (each waits for its
-- binary) and settled: where the budget has no room for another batch beside them, and
-- at the search's end. Returns ok, msg.
function Ctx:drain_carried(strategy, protected)
  if not (self.carried and #self.carried > 0) then return true end
  self.next_spill, self.next_exact, self.next_spare = nil, nil, nil
  -- (what ran ahead stays for the batch that claims it, or the search's end)
  local pre = self.pre
  self.pre = {}
  local ok, msg = self:evaluate_ready_first({}, {}, strategy, protected)
  for k, v in pairs(self.pre) do pre[k] = v end
  self.pre = pre
  return ok, msg
end

-- Settles results run ahead that no batch claimed (pre: key -> {cand, result}), in the
-- order they ran. Returns ok, msg like settle_batch.
function Ctx:settle_pre(pre, strategy, protected)
  local got = {}
  for _, p in pairs(pre or {}) do
    if not self.done_keys[M.key(p.cand)] then got[#got + 1] = p end
  end
  if #got == 0 then return true end
  table.sort(got, function(a, b) return a.seq < b.seq end)
  local list, results = {}, {}
  for i, p in ipairs(got) do
    self.done_keys[M.key(p.cand)] = true
    list[i], results[i] = p.cand, p.result
  end
  return self:settle_batch(list, results, strategy, protected)
end

-- The first budget that is spent, or nil.
function Ctx:budget_spent()
  local o = self.opts
  if #self.history - 1 >= o.budget then return "candidates" end
  if o.time > 0 and sys.now() - self.t0 >= o.time then return "time" end
  if o.tokens > 0 and (self.tokens or 0) >= o.tokens then return "tokens" end
  if o.money > 0 and (self.cost or 0) >= o.money then return "money" end
end

-- Errors raised with a position (bugs) keep their traceback; plain messages raised
-- with level 0 (a strategy explaining itself) are shown as they are; an interruption
-- stays the sentinel (kloop.core.sys.INTERRUPTED).
local function handler(e)
  if sys.is_interrupt(e) then return e end
  if type(e) == "string" and e:match("^[^%s:]+:%d+:") then return debug.traceback(e, 2) end
  return tostring(e)
end

local function protected(name, fn, ...)
  if not fn then return true end
  local args, n = { ... }, select("#", ...)
  local ok, err = xpcall(function() return fn(unpack(args, 1, n)) end, handler)
  if not ok then
    if sys.is_interrupt(err) then return false, err end -- M.run tells it apart
    return false, name .. ": " .. tostring(err), err
  end
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
  if opts.profile ~= "best" and opts.profile ~= "all" and opts.profile ~= "none" then
    util.eprintf("kloop: --profile %s: give best, all or none\n", tostring(opts.profile))
    return 2
  end
  for _, name in ipairs({ "cascade", "promote" }) do
    local want = name == "cascade" and { "on", "off" } or { "auto", "off" }
    if opts[name] ~= want[1] and opts[name] ~= want[2] then
      util.eprintf("kloop: --%s %s: give %s or %s\n", name, tostring(opts[name]), want[1], want[2])
      return 2
    end
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
  local ctx
  -- (precompile_baseline: the task's own kernel compiles from the first arch known on,
  -- beside kloop's own kernels and the reference: the baseline is the first evaluation)
  -- (not in a resumed run: its baseline is evaluated already, or else compiles when it runs)
  local ev = eval.new(task, { deadline = opts.deadline > 0 and opts.deadline or nil,
    precompile_baseline = not (opts.resume and opts.resume > 0),
    on_reevaluate = function(result) ctx:reevaluated(result) end,
    log = function(line) if not opts.quiet then util.eprintf("kloop: %s\n", line) end end })
  -- one local worker on GPU 0 (the usual case): it is spawned, its hello sent, before the
  -- probe below, so its CUDA start overlaps the probe's (W:prespawn)
  -- (and with the arch NVML names, in 20 ms without a CUDA context, kloop's own kernels
  -- and the reference compile from then too)
  local library = require("kloop.eval.library")
  if task.backend == "cuda" and opts.gpus == "" and opts.remote_workers == "" and opts.workers <= 1 then
    pcall(ev.prespawn, ev, gpu.arch_hint(0))
  end
  -- (and the library reference's timing child, which loads cuBLAS meanwhile; a resumed
  -- run keeps the reference it recorded)
  local lib_child = task.library and not (opts.resume and opts.resume > 0) and library.prestart(task) or nil
  -- the GPU's facts go into the run's provenance (name, arch, driver)
  local gpu_facts = task.backend == "cuda" and gpu.probe(0) or nil
  if lib_child then
    -- (no GPU, or its reference kept from an earlier run: no measurement to make)
    local okk, is_kept = pcall(library.is_kept, gpu_facts, task)
    if not gpu_facts or not okk or is_kept then
      library.abandon(lib_child)
      lib_child = nil
    end
  end
  if task.backend == "cuda" and not gpu_facts then
    ev:close()
    util.eprintf("kloop: no GPU here for %s; try a host task (examples/cpu/*.c)\n", target)
    return 1
  end
  -- (gpu_hint: the probe's arch, so the worker's first compiles start before its hello)
  ev.opts.gpu_hint = gpu_facts
  ctx = setmetatable({ task = task, gpu = gpu_facts, opts = opts, history = {}, verdicts = {}, stages = {},
    t0 = sys.now(), done_keys = {}, rng = rng.new(opts.seed), strategy = strategy, path = path, target = target, given = given }, Ctx)
  ctx.ev = ev
  local okp, perr = require("kloop.search.workers").build(ctx, eval)
  if not okp then library.abandon(lib_child) ev:close() util.eprintf("kloop: %s\n", perr) return 2 end
  if not opts.no_store then
    local s, serr = require("kloop.store.run").open(ctx, opts.db ~= "" and opts.db or nil)
    if not s then library.abandon(lib_child) ev:close() util.eprintf("kloop: store: %s\n", serr) return 1 end
    ctx.store = s
    ctx.run_id = s.run_id
  end
  -- (the prestarted timing child kept, or stopped: a reference measured before on this
  -- GPU; it times after the baseline, at_start below)
  if lib_child and not pcall(library.early, ctx, nil, lib_child) then
    library.abandon(lib_child)
    ctx.library_child = nil
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
      cand.improved = cand.result.crowned == true or nil
      ctx:recompute_best()
      if cand.proposer == "baseline" then
        ctx.baseline = cand
      else
        ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result)
        if not ok then break end
      end
    end
  end
  -- stored candidates whose evaluation a clean stop (Ctrl-C) cut short run again (the
  -- baseline as the baseline, the rest after it), before anything new is proposed
  local unsettled = ctx.store and ctx.store.unsettled and ctx.store:unsettled() or {}
  local pending, pending_base = {}, nil
  for _, cand in ipairs(ctx.store and ctx.store:pending() or {}) do
    if cand.proposer == "baseline" then pending_base = pending_base or cand else pending[#pending + 1] = cand end
  end
  if ctx.store and ctx.store.resumed and not ctx.opts.quiet then
    local s = ctx.store
    print(string.format("resumed run %d: %d evaluations restored%s%s%s", ctx.run_id, #restored - s.crashed,
      s.crashed > 0 and string.format(", %d marked crashed (kloop stopped during their evaluation)", s.crashed) or "",
      #unsettled > 0 and string.format(", %d that had run but not settled settled now", #unsettled) or "",
      #s.rerun > 0 and string.format(", %d interrupted evaluated again", #s.rerun) or ""))
  end
  if ok and not ctx.baseline then
    -- the baseline: the task's own kernel, so every speedup has a reference
    local base = { source = task.source, proposer = "baseline", label = "baseline",
      store_id = pending_base and pending_base.store_id }
    -- (the library reference's timing child, where none began with the prespawn: it
    -- loads cuBLAS beside the worker's start and times after the baseline, at_start)
    if task.library and not lib_child then pcall(library.early, ctx) end
    -- pipelining starts here: the model works on the first children while the worker
    -- starts, the reference is computed and the baseline is timed
    ok, msg = protected("prefetch", function()
      ctx:lookahead(base, ctx.opts.batch or ctx.opts.expand or 4, ctx.opts.budget)
    end)
    -- and the first batches the strategy foresees compile while the worker starts and
    -- the baseline runs (upcoming has no side effects: the strategy is as it was)
    if ok then ok, msg = protected("upcoming", function() ctx:compile_ahead(strategy, 0) end) end
    if ok then ok, msg = protected("baseline", function() ctx:evaluate(base) end) end
    ctx.baseline = base
    ctx.done_keys[M.key(base)] = true -- the task's kernel proposed as it is is no new candidate
    if ok and base.result.verdict ~= "ok" then
      util.eprintf("kloop: the task's own kernel fails (%s: %s); speedups are not defined\n",
        base.result.verdict, base.result.reason or "")
    end
  elseif ok and ctx.baseline.result.verdict ~= "ok" then
    util.eprintf("kloop: the task's own kernel failed (%s: %s); speedups are not defined\n",
      ctx.baseline.result.verdict, ctx.baseline.result.reason or "")
  end
  -- the library's time for the same work (the report's reference line), measured once:
  -- a timing child begun with the worker times where the GPU idles anyway, at the first
  -- compile wait that finds it ready (beside the worker's context: a GPU in the default
  -- compute mode only), else after the search with the worker closed (ctx:end_library);
  -- one kept from an earlier run, or one with no child begun, now
  if ok and task.library then
    if ctx.library_child and not ctx.pool then
      if ctx.gpu and ctx.gpu.compute_mode == "default" then
        ctx.ev.idle_job = function(left) return ctx:library_idle(left) end
      end
    else
      ctx:measure_library()
    end
  end
  -- the loop itself runs protected too: Ctrl-C can land between two hook calls
  local okloop, lerr = xpcall(function()
  -- results that ran to their end but had not settled when kloop was killed (stored
  -- unsettled: kloop.store.run A:record_provisional) settle now, in the order they ran:
  -- the A/B that may crown them runs, the store's row becomes the settled one
  -- (then the interrupted ones, evaluated again: a candidate without a result)
  for _, cand in ipairs(pending) do unsettled[#unsettled + 1] = cand end
  for _, cand in ipairs(unsettled) do
    if not ok or ctx:budget_spent() then break end
    if sys.interrupted() then ok, msg = false, sys.INTERRUPTED break end
    local key = M.key(cand)
    if not ctx.done_keys[key] then
      ctx.done_keys[key] = true
      ok, msg = protected("evaluate", function() ctx:evaluate(cand, cand.result) end)
      if ok then ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result) end
    end
  end
  while ok do
    -- the Ctrl-C hook may have fired inside a pcall that swallowed it: the count stays
    if sys.interrupted() then ok, msg = false, sys.INTERRUPTED break end
    local spent = ctx:budget_spent()
    if spent then reason = "budget: " .. spent break end
    -- (candidates carried from a spilled batch that leave no room for another: run now)
    if ctx.carried and #ctx.carried > 0 and ctx:room_after(0) <= 0 then
      ok, msg = ctx:drain_carried(strategy, protected)
      if not ok then break end
      spent = ctx:budget_spent()
      if spent then reason = "budget: " .. spent break end
    end
    local cands
    local tp = sys.now()
    ok, cands = protected("propose", strategy.propose, ctx)
    ctx:spend("propose", tp)
    eval.waits_log("proposed") -- (benches: bench/request_gaps.py)
    if not ok then msg = cands break end
    if not cands or #cands == 0 then reason = "the strategy has nothing more to propose" break end
    -- compile the whole batch in parallel while nothing else needs the CPU
    local real = {}
    for _, c in ipairs(cands) do if not c.skip then real[#real + 1] = c end end
    ok, msg = protected("compile", function() ctx:queue_precompile(real, true) end)
    eval.waits_log("batch_queued")
    if not ok then break end
    ok, msg = protected("upcoming", function() ctx:compile_ahead(strategy, #real) end)
    if not ok then break end
    -- pipelining: the LLM works on the next step while this batch is evaluated
    local left = ctx.opts.budget - (#ctx.history - 1)
    ok, msg = protected("prefetch", function() ctx:lookahead(ctx.best or ctx.baseline, #real, left - #real) end)
    if not ok then break end
    -- the strategy's work for while the GPU runs (strategy.think): during the batch's
    -- first worker request; what it returns compiles at once
    ctx:arm_think(strategy, #real)
    local prop = ctx.proposer
    ok, msg = ctx:claim_pre(cands, strategy, protected)
    if not ok then break end
    local tq = sys.now()
    local fresh = not ctx.pool and ctx.opts.cascade ~= "on" and ctx:fresh_batch(cands)
    local thinks = strategy.think ~= nil and ctx.ev.on_sent ~= nil
    local order = fresh and ctx:ready_order(fresh, thinks)
    if fresh and not order and (thinks or (ctx.pre and next(ctx.pre)) or #(ctx.carried or {}) > 0) then
      -- (a batch compiled whole, with a think to run: in proposal order, through the loop
      -- that settles no result before the think is done, so the think is sliced; or with
      -- results run ahead for this batch: claimed in its proposal order)
      order = {}
      for i = 1, #fresh do order[i] = i end
    end
    ctx:spend("queue", tq)
    if ctx.pool then
      ok, msg = require("kloop.search.workers").evaluate_batch(ctx, cands, strategy, protected)
    elseif order then
      -- (think in slices between the worker's replies: kloop.search.slice)
      ctx.ev.slice_think = thinks and slice.enabled and slice.job or nil
      ok, msg = ctx:evaluate_ready_first(fresh, order, strategy, protected)
      ctx.ev.slice_think = nil
    else
      for _, cand in ipairs(cands) do
        if ctx:budget_spent() or sys.interrupted() then break end
        if prop and prop.pump then prop:pump() end
        local key = not cand.skip and M.key(cand)
        if key and not ctx.done_keys[key] then
          ctx.done_keys[key] = true
          ok, msg = protected("evaluate", function() ctx:evaluate(cand) end)
          if not ok then break end
          local tr = sys.now()
          ok, msg = protected("on_result", strategy.on_result, ctx, cand, cand.result)
          ctx:spend("strategy", tr)
          if not ok then break end
        end
      end
    end
    ctx.ev.on_sent = nil -- (not fired: no request ran; the next propose does the same work)
    ctx.ev.think_job = nil -- (done, or cut by an error or Ctrl-C that ends the run)
    if ok and ctx.think_error then ok, msg = false, ctx.think_error end
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
  -- candidates carried from a spilled batch: run and settled before the search ends
  if ok then ok, msg = ctx:drain_carried(strategy, protected) end
  -- results run ahead that no batch claimed (the strategy stopped proposing): settled
  if ok and ctx.pre and next(ctx.pre) then
    local pre = ctx.pre
    ctx.pre = {}
    ok, msg = ctx:settle_pre(pre, strategy, protected)
  end
  end, handler)
  if not okloop then ok, msg = false, lerr end
  -- closing: from here a signal is only counted (a repeat after a while still ends
  -- kloop), so the done hook, the store and the summary are not cut short
  native.sigint_hold(true)
  local signo = sys.interrupt_signal()
  if sys.interrupted() and ok then ok, msg = false, sys.INTERRUPTED end
  if not ok then
    if sys.interrupted() or sys.is_interrupt(msg) then
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
  okc, cmsg = pcall(function()
    require("kloop.eval.compile").cancel_background() -- compiles of candidates no one will evaluate
    if ctx.pool then ctx.pool:close_others() end
    ctx.ev:close()
  end)
  if not okc then util.eprintf("kloop: closing the worker: %s\n", tostring(cmsg)) end
  ctx:end_library(status)
  if status == "done" and opts.promote == "auto" then ctx:promote_best() end
  if ctx.store then
    local stored
    okc, cmsg = pcall(function() stored = ctx.store:finish(ctx, status, reason) end)
    if not okc then util.eprintf("kloop: store: %s\n", tostring(cmsg)) end
    if (not okc or not stored) and status == "done" then
      status, reason = "failed", "store: " .. tostring(ctx.store.failed or cmsg) .. "; " .. ctx.store:kept_text()
    end
  end
  ctx:write_report(true)
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

M.Ctx = Ctx -- for tests
return M
