-- kloop.run_store: connects a strategy run (kloop.driver) to the run store: one run
-- row; per evaluation a candidate row (with its LLM calls) written before it starts and
-- an evaluation row written when it ends, so a candidate that takes kloop down with it
-- is in the store and is marked crashed on --resume instead of being run again.
local store = require("kloop.store")
local util = require("kloop.util")
local core = require("kloop.core")

local M = {}
local A = {}
A.__index = A

local LLM_KEEP = { candidate_id = true, request_hash = true, model = true, latency_s = true, http_status = true,
  tokens_in = true, tokens_out = true, retries = true, cost = true, error = true }

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
    ctx.rng = require("kloop.rng").new(o.seed)
    self.resumed = state
    return self
  end
  local budget = { candidates = o.budget, time = o.time, tokens = o.tokens, money = o.money }
  local id, berr = db:begin_run({ strategy_path = ctx.path, task = ctx.task, options = o, budget = budget,
    seed = o.seed, gpu = ctx.gpu, nvrtc_version = ctx.task.backend == "cuda" and core.nvrtc_version() or nil })
  if not id then db:close() return nil, berr end
  self.run_id = id
  return self
end

M.CRASHED_REASON = "kloop stopped during this candidate's evaluation (run resumed)"

-- A resumed run's candidates that have no evaluation were being evaluated when it
-- stopped. Killed (the run is still marked running: SIGKILL, a lost machine, or the
-- candidate took kloop down): each gets a crashed evaluation now, so it counts against
-- the budget and is never run again. Stopped cleanly (Ctrl-C, a strategy error):
-- nothing was the candidate's fault, and it is evaluated again (A:pending).
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

-- The stored candidates of a resumed run that have an evaluation (crashed ones
-- included), as driver candidates with results, in order.
function A:restored()
  local out = {}
  for _, c in ipairs(self.resumed and self.resumed.candidates or {}) do
    if c.evaluation then
      local cand = as_cand(c)
      cand.result = c.evaluation
      cand.evaluation_store_id = c.evaluation.id
      out[#out + 1] = cand
    end
  end
  return out
end

-- The stored candidates of a resumed run to evaluate again (their evaluation was
-- interrupted), as driver candidates already in the store (store_id set), in order.
function A:pending()
  local out = {}
  for _, c in ipairs(self.rerun or {}) do out[#out + 1] = as_cand(c) end
  return out
end

function A:warn(what, err)
  if not self.warned then
    util.eprintf("kloop: store: %s failed (%s); the run goes on, later rows may be missing\n", what, tostring(err))
    self.warned = true
  end
end

-- Writes a candidate about to be evaluated, with its LLM calls (cand.store_id); a
-- candidate already stored (one evaluated again on resume) is left as it is.
function A:propose(ctx, cand)
  if cand.store_id then return cand.store_id end
  local parents = {}
  if cand.parent and cand.parent.store_id then parents[1] = cand.parent.store_id end
  local id, err = self.db:add_candidate(self.run_id, {
    source = cand.source, name = cand.name, params = cand.defines, parents = parents,
    proposer = cand.proposer or "user", model = cand.model, prompt_id = cand.prompt_id,
    prompt_hash = cand.prompt_hash, sampling = cand.sampling, llm_seed = cand.llm_seed,
    tokens_in = cand.tokens_in, tokens_out = cand.tokens_out, cost = cand.cost })
  if not id then return self:warn("add_candidate", err) end
  cand.store_id = id
  for _, rec in ipairs(cand.llm_calls or {}) do
    local r = { candidate_id = id }
    for k, v in pairs(rec) do if LLM_KEEP[k] then r[k] = v end end
    local okc, cerr = self.db:add_llm_call(self.run_id, r)
    if not okc then self:warn("add_llm_call", cerr) end
  end
  return id
end

-- Writes the evaluation of a proposed candidate (cand.result) on its stored id.
function A:record(ctx, cand)
  local id = cand.store_id or self:propose(ctx, cand) -- (the first write failed: try once more)
  if not id then return end
  local ok, eerr = self.db:add_evaluation(id, cand.result)
  if not ok then self:warn("add_evaluation", eerr) end
  cand.evaluation_store_id = ok or nil
end

-- A profile taken after the candidate was recorded (a strategy's ctx:profile).
function A:record_profile(cand)
  if not cand.evaluation_store_id then return end
  local ok, err = self.db:set_profile(cand.evaluation_store_id, cand.result.profile)
  if not ok then self:warn("set_profile", err) end
end

function A:finish(ctx, status, reason)
  local ok, err = self.db:end_run(self.run_id, status, reason)
  if not ok then self:warn("end_run", err) end
  self.db:close()
end

return M
