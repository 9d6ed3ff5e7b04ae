-- kloop.store.run: connects a strategy run (kloop.driver) to the run store: one run
-- row; per evaluation a candidate row (with its LLM calls) written before it starts and
-- an evaluation row written when it ends, so a candidate that takes kloop down with it
-- is in the store and is marked crashed on --resume instead of being run again.
local store = require("kloop.store.db")
local schema = require("kloop.store.schema")
local nvrtc = require("kloop.core.nvrtc")
local loader = require("kloop.search.loader")
local util = require("kloop.util")

local M = {}
local A = {}
A.__index = A

-- The fields of a strategy's LLM call record (kloop.llm call_record) that an llm_calls
-- row has (schema.LLM_CALL_FIELDS); the rest (attempts, prompt, cached) is dropped.
local LLM_KEEP = {}
for _, f in ipairs(schema.LLM_CALL_FIELDS) do LLM_KEEP[f[1]] = true end

-- Opens the store and starts (or, with ctx.opts.resume, reopens) the run.
function M.open(ctx, path)
  local db, err = store.open(path or store.default_path())
  if not db then return nil, err end
  local self = setmetatable({ db = db, path = path or store.default_path() }, A)
  local o = ctx.opts
  if o.resume and o.resume > 0 then
    local state, rerr = db:resume_state(o.resume)
    if not state then db:close() return nil, rerr end
    if state.run.task_path and util.basename(state.run.task_path) ~= util.basename(ctx.task.kernel) then
      db:close()
      return nil, string.format("run %d was on %s, not %s", o.resume, state.run.task_path, ctx.task.kernel)
    end
    local was, now = state.run.strategy_path, ctx.path
    local sname = loader.strategy_name
    if was and now and sname(was) ~= sname(now) and not o.force then
      db:close()
      return nil, string.format("run %d was made by %s, not %s: its state would not fit (give --force to continue it anyway)",
        o.resume, sname(was), sname(now))
    end
    local pkg = M.package(ctx)
    local changed = M.changed_files(db, state.run, pkg)
    if #changed > 0 and not o.force then
      db:close()
      return nil, M.changed_text(o.resume, changed)
    end
    if #changed > 0 then
      local okf, ferr = db:note_forced_resume(o.resume, changed)
      if not okf then db:close() return nil, "recording the forced resume: " .. tostring(ferr) end
      util.eprintf("kloop: resuming run %d with changed strategy files (--force, recorded in the run)\n", o.resume)
    end
    -- read before reopen_run marks it running again: how did the run end?
    local killed = state.run.status == "running"
    assert(db:reopen_run(o.resume))
    self.run_id = o.resume
    self:settle(state, killed)
    -- the run's own options (budget, seed, ...) apply unless given again now
    for k, v in pairs(state.run.options or {}) do
      if o[k] ~= nil and not (ctx.given or {})[k] and k ~= "resume" and k ~= "db" then o[k] = v end
    end
    if state.run.seed then o.seed = state.run.seed end
    ctx.rng = require("kloop.search.rng").new(o.seed)
    self.resumed = state
    local rerr2 = self:record_files(pkg, db:run_files(o.resume))
    if rerr2 then db:close() return nil, rerr2 end
    return self
  end
  local budget = { candidates = o.budget, time = o.time, tokens = o.tokens, money = o.money }
  -- (runs.seed keeps the seed exactly; in the options JSON a seed of 10^14 or more is
  -- text, since JSON numbers there keep 14 digits)
  if type(o.seed) == "number" and o.seed >= 1e14 then
    local copy = {}
    for k, v in pairs(o) do copy[k] = v end
    copy.seed = string.format("%d", o.seed)
    o = copy
  end
  local pkg = M.package(ctx)
  local id, berr = db:begin_run({ strategy_path = ctx.path, task = ctx.task, options = o, budget = budget,
    seed = o.seed, gpu = ctx.gpu, nvrtc_version = ctx.task.backend == "cuda" and nvrtc.version() or nil,
    strategy_text = pkg and pkg.entry_row.text })
  if not id then db:close() return nil, berr end
  self.run_id = id
  local ferr = self:record_files(pkg, {})
  if ferr then db:close() return nil, ferr end
  return self
end

-- The package (kloop.search.loader) the run's strategy came from; a strategy table
-- handed to the driver without one is a package of its entry file alone, when readable.
function M.package(ctx)
  local pkg = loader.package_of(ctx.strategy)
  if pkg or not ctx.path or not loader.is_file(ctx.path) then return pkg end
  local _, p = loader.load(ctx.path)
  return p
end

-- The files of a stored run that differ now: {module, path, was, now} each (now nil: the
-- file is gone). A run from before run_files compares its entry's strategy_hash.
function M.changed_files(db, run, pkg)
  local out = {}
  if not pkg then return out end
  local rows = db:run_files(run.id)
  if #rows == 0 and run.strategy_hash then
    rows = { { module = pkg.entry_row.module, role = "entry", hash = run.strategy_hash, path = run.strategy_path } }
  end
  for _, r in ipairs(rows) do
    local now, path = pkg:current(r.module, r.role)
    if now ~= r.hash then
      out[#out + 1] = { module = r.module, path = path or r.path, was = r.hash, now = now }
    end
  end
  return out
end

function M.changed_text(run_id, changed)
  local parts = {}
  for _, c in ipairs(changed) do
    parts[#parts + 1] = string.format("%s (%s) was %s, now %s", c.module, c.path, c.was,
      c.now or "missing")
  end
  return string.format("run %d's strategy files changed since it ran: %s; resuming would mix code "
    .. "(give --force to resume anyway: it is recorded in the run; kloop strategy-files %d -o DIR has the old files)",
    run_id, table.concat(parts, "; "), run_id)
end

-- Records the package's files not yet in the run (stored: its run_files rows), and every
-- file it loads later while the run is open (a module required lazily in a hook).
-- Returns nil, or the message of a write the store refused.
function A:record_files(pkg, stored)
  if not pkg then return nil end
  local have = {}
  for _, r in ipairs(stored) do have[r.module], have["\0" .. r.role] = true, true end
  local function add(row)
    -- (a run resumed through another entry file, with --force, keeps its first entry)
    if have[row.module] or (row.role == "entry" and have["\0entry"]) then return true end
    have[row.module] = true
    return self.db:add_run_file(self.run_id, row)
  end
  for _, row in ipairs(pkg.files) do
    local ok, err = add(row)
    if not ok then return "recording " .. row.path .. ": " .. tostring(err) end
  end
  self.unlisten = pkg:listen(function(row)
    local ok, err = add(row)
    if not ok then self:warn("add_run_file " .. row.path, err) end
  end)
  return nil
end

M.CRASHED_REASON = "kloop stopped during this candidate's evaluation (run resumed)"

-- A resumed run's candidates that have no evaluation were being evaluated when it
-- stopped. Killed (the run is still marked running: SIGKILL, a lost machine, or the
-- candidate took kloop down): each gets a crashed evaluation now, so it counts against
-- the budget and is never run again. Stopped cleanly (Ctrl-C, a strategy error):
-- nothing was the candidate's fault, and it is evaluated again (A:pending). (One whose
-- result was stored unsettled has an evaluation: A:unsettled, settled by the driver.)
function A:settle(state, killed)
  self.crashed, self.rerun = 0, {}
  for _, c in ipairs(state.candidates) do
    if not c.evaluation then
      if killed then
        local r = { verdict = "crashed", reason = M.CRASHED_REASON, evidence = { resumed = true } }
        local id, err = self.db:add_evaluation(c.id, r)
        if id then
          r.id = id
          c.evaluation = r
          self.crashed = self.crashed + 1
        else
          self:warn("add_evaluation", err)
        end
      else
        self.rerun[#self.rerun + 1] = c
      end
    end
  end
end

local function as_cand(c)
  return { source = c.source, defines = c.params, proposer = c.proposer, name = c.name, store_id = c.id,
    model = c.model, prompt_id = c.prompt_id, prompt_hash = c.prompt_hash, sampling = c.sampling,
    llm_seed = c.llm_seed, tokens_in = c.tokens_in, tokens_out = c.tokens_out, cost = c.cost_usd,
    parent_ids = c.parents }
end

-- A stored evaluation row back as an Evaluator result: its columns and its extra fields,
-- without the row's own ids and the unsettled mark.
local RESULT_FIELDS = { "verdict", "reason", "evidence", "compile_log", "resources", "samples", "reps", "time_ms",
  "ci_ms", "min_ms", "spread", "tflops", "gbps", "frac_peak", "bound", "floor_ms", "profile", "gpu", "arch",
  "compile_seconds", "compile_cached", "eval_seconds", "wall_seconds", "created_at", "stage" }
local function result_of_row(e)
  local r = {}
  for k, v in pairs(type(e.extra) == "table" and e.extra or {}) do r[k] = v end
  for _, k in ipairs(RESULT_FIELDS) do if e[k] ~= nil then r[k] = e[k] end end
  r.unsettled = nil
  return r
end

-- The results of a resumed run that ran to their end but had not settled when kloop
-- was killed (A:record_provisional), as driver candidates with results and
-- provisional_eid, in the order they ran: the driver settles them (the crowning A/B,
-- the settled row) before anything else runs.
function A:unsettled()
  local out = {}
  for _, c in ipairs(self.resumed and self.resumed.candidates or {}) do
    local e = c.evaluation
    if e and e.unsettled == true then
      local cand = as_cand(c)
      cand.result = result_of_row(e)
      cand.provisional_eid = e.id
      out[#out + 1] = cand
    end
  end
  table.sort(out, function(a, b) return a.provisional_eid < b.provisional_eid end)
  return out
end

-- The stored candidates of a resumed run that have a settled evaluation (crashed ones
-- included), as driver candidates with results, in the order they were settled (their
-- first evaluations' ids): a batch may run its candidates, and one of the next batch, out of
-- proposal order, and the best is the last one crowned in settle order, as DB:best says.
-- (An unsettled one is A:unsettled's.)
function A:restored()
  local out = {}
  local first = {}
  for _, c in ipairs(self.resumed and self.resumed.candidates or {}) do
    if c.evaluation and c.evaluation.unsettled ~= true then
      local cand = as_cand(c)
      cand.result = c.evaluation
      cand.evaluation_store_id = c.evaluation.id
      out[#out + 1] = cand
      -- (settled when its first evaluation was written: a sentinel's re-evaluation
      -- writes a later row, with the result it replaces in place)
      local f = c.evaluation.id
      for _, e in ipairs(c.evaluations or {}) do if e.id and (not f or e.id < f) then f = e.id end end
      first[cand] = f or 0
    end
  end
  table.sort(out, function(a, b) return first[a] < first[b] end)
  return out
end

-- The stored candidates of a resumed run to evaluate again (their evaluation was
-- interrupted), as driver candidates already in the store (store_id set), in order.
function A:pending()
  local out = {}
  for _, c in ipairs(self.rerun or {}) do out[#out + 1] = as_cand(c) end
  return out
end

-- A write the store refused (a full disk, an I/O error): the run cannot keep its
-- promise that every fact is recorded, so it stops (the driver checks self.failed after
-- each step) and says what the store still holds.
function A:warn(what, err)
  if not self.failed then
    self.failed = string.format("%s failed (%s)", what, tostring(err))
  end
end

-- What the store kept, for the line that says why the run stopped.
function A:kept_text()
  return string.format("the store %s keeps %d candidates with %d evaluations of run %d", self.path,
    self.kept_candidates or 0, self.kept_evaluations or 0, self.run_id or 0)
end

-- One session event (kloop.llm log): a row per HTTP request, inserted when it is sent
-- (outcome inflight: a kill leaves it so) and updated when it ends (retry, ok, failed,
-- cancelled); a cached answer is a row of its own. self.llm_rows[seq] lists a call's rows.
function A:llm_event(_ctx, ev)
  self.llm_rows = self.llm_rows or {}
  self.llm_open = self.llm_open or {}
  local rows = self.llm_rows[ev.seq] or {}
  self.llm_rows[ev.seq] = rows
  if ev.event == "llm_send" then
    local id, err = self.db:add_llm_call(self.run_id, { request_hash = ev.key, model = ev.model, outcome = "inflight",
      attempt = ev.attempt, retries = (ev.attempt or 1) - 1 })
    if not id then return self:warn("add_llm_call", err) end
    rows[#rows + 1] = id
    self.llm_open[ev.seq] = id
  elseif ev.event == "llm_retry" then
    local id = self.llm_open[ev.seq]
    self.llm_open[ev.seq] = nil
    if id then
      local ok, err = self.db:update_llm_call(id, { outcome = "retry", http_status = ev.status, latency_s = ev.attempt_s,
        error = ev.why })
      if not ok then self:warn("update_llm_call", err) end
    end
  elseif ev.event == "llm_done" then
    local id = self.llm_open[ev.seq]
    self.llm_open[ev.seq] = nil
    local outcome = ev.cached and "cached" or ev.ok and "ok" or ev.kind == "cancelled" and "cancelled" or "failed"
    local fields = { outcome = outcome, http_status = ev.status, latency_s = ev.cached and 0 or ev.attempt_s,
      tokens_in = ev.usage and ev.usage.input, tokens_out = ev.usage and ev.usage.output, cost = ev.cost,
      error = (not ev.ok) and ev.reason or nil, kind = (not ev.ok) and ev.kind or nil, retries = ev.retries }
    local ok, err
    if id then
      ok, err = self.db:update_llm_call(id, fields)
    elseif ev.cached or #rows == 0 then
      -- no request went out for it (a cache hit, or it ended before it could start)
      fields.request_hash, fields.model, fields.attempt = ev.key, ev.model, 0
      ok, err = self.db:add_llm_call(self.run_id, fields)
      if ok then rows[#rows + 1] = ok end
    else
      ok = true -- it ended while waiting to retry: its last row says why it was retried
    end
    if not ok then self:warn("llm_call", err) end
  end
end

-- Writes a candidate about to be evaluated, with its LLM calls (cand.store_id); a
-- candidate already stored (one evaluated again on resume) is left as it is.
function A:propose(_ctx, cand)
  if cand.store_id then return cand.store_id end
  local parents = {}
  if cand.parent and cand.parent.store_id then parents[1] = cand.parent.store_id end
  local id, err = self.db:add_candidate(self.run_id, {
    source = cand.source, name = cand.name, params = cand.defines, parents = parents,
    proposer = cand.proposer or "user", model = cand.model, prompt_id = cand.prompt_id,
    prompt_hash = cand.prompt_hash, sampling = cand.sampling, llm_seed = cand.llm_seed,
    tokens_in = cand.tokens_in, tokens_out = cand.tokens_out, cost = cand.cost,
    conversation_id = cand.conversation_id })
  if not id then return self:warn("add_candidate", err) end
  cand.store_id = id
  self.kept_candidates = (self.kept_candidates or 0) + 1
  -- the requests that produced it were recorded as they happened: link them
  for _, rid in ipairs(cand.llm_seq and self.llm_rows and self.llm_rows[cand.llm_seq] or {}) do
    local okc, cerr = self.db:update_llm_call(rid, { candidate_id = id })
    if not okc then self:warn("update_llm_call", cerr) end
  end
  for _, rec in ipairs(cand.llm_calls or {}) do
    local r = { candidate_id = id }
    for k, v in pairs(rec) do if LLM_KEEP[k] then r[k] = v end end
    local okc, cerr = self.db:add_llm_call(self.run_id, r)
    if not okc then self:warn("add_llm_call", cerr) end
  end
  return id
end

-- A result that ran but settles later (a batch run out of proposal order, a candidate
-- of the next batch, a point filling a wait): written now, marked unsettled, so a kill
-- before its settling leaves the result (not a crash: it ran to the end) for --resume;
-- its settling replaces the row by the settled one (A:record), in settle order.
function A:record_provisional(ctx, cand, r)
  local id = cand.store_id or self:propose(ctx, cand)
  if not id or cand.provisional_eid then return end
  local row = {}
  for k, v in pairs(r) do row[k] = v end
  row.unsettled = true
  local eid, err = self.db:add_evaluation(id, row)
  if not eid then return self:warn("add_evaluation", err) end
  cand.provisional_eid = eid
end

-- Writes the evaluation of a proposed candidate (cand.result) on its stored id.
function A:record(ctx, cand)
  local id = cand.store_id or self:propose(ctx, cand) -- (the first write failed: try once more)
  if not id then return end
  if cand.provisional_eid then
    -- (the unsettled row and the settled one in one transaction: a kill between them
    -- must leave one of the two)
    local pid = cand.provisional_eid
    cand.provisional_eid = nil
    local ok, err = self.db:batch(function()
      local okd, derr = self.db:delete_evaluation(pid)
      if not okd then return nil, derr end
      return self.db:add_evaluation(id, cand.result)
    end)
    if not ok then self:warn("add_evaluation", err) else self.kept_evaluations = (self.kept_evaluations or 0) + 1 end
    cand.evaluation_store_id = ok or nil
    return
  end
  local ok, eerr = self.db:add_evaluation(id, cand.result)
  if not ok then self:warn("add_evaluation", eerr) else self.kept_evaluations = (self.kept_evaluations or 0) + 1 end
  cand.evaluation_store_id = ok or nil
end

-- A profile taken after the candidate was recorded (a strategy's ctx:profile).
function A:record_profile(cand)
  if not cand.evaluation_store_id then return end
  local ok, err = self.db:set_profile(cand.evaluation_store_id, cand.result.profile)
  if not ok then self:warn("set_profile", err) end
end

function A:finish(_ctx, status, reason)
  if self.unlisten then self.unlisten() self.unlisten = nil end
  local ok, err = self.db:end_run(self.run_id, status, reason)
  if not ok then
    self:warn("end_run", err)
    util.eprintf("kloop: store: could not mark run %d %s (%s); %s\n", self.run_id, status, tostring(err), self:kept_text())
  end
  self.db:close()
  return ok
end

M.Run = A -- for tests

return M
