-- kloop.run_store: connects a strategy run (kloop.driver) to the run store: one run
-- row, and a candidate + evaluation row per evaluation, written as they happen.
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
    assert(db:reopen_run(o.resume))
    self.run_id = o.resume
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

-- The stored candidates of a resumed run, as driver candidates with results, in order.
function A:restored()
  local out = {}
  for _, c in ipairs(self.resumed and self.resumed.candidates or {}) do
    if c.evaluation then
      local cand = { source = c.source, defines = c.params, proposer = c.proposer, name = c.name,
        result = c.evaluation, store_id = c.id, model = c.model }
      out[#out + 1] = cand
    end
  end
  return out
end

function A:warn(what, err)
  if not self.warned then
    util.eprintf("kloop: store: %s failed (%s); the run goes on, later rows may be missing\n", what, tostring(err))
    self.warned = true
  end
end

function A:record(ctx, cand)
  local parents = {}
  if cand.parent and cand.parent.store_id then parents[1] = cand.parent.store_id end
  local id, err = self.db:add_candidate(self.run_id, {
    source = cand.source, name = cand.name, params = cand.defines, parents = parents,
    proposer = cand.proposer or "user", model = cand.model, prompt_id = cand.prompt_id,
    prompt_hash = cand.prompt_hash, sampling = cand.sampling, llm_seed = cand.llm_seed,
    tokens_in = cand.tokens_in, tokens_out = cand.tokens_out, cost = cand.cost })
  if not id then return self:warn("add_candidate", err) end
  cand.store_id = id
  local ok, eerr = self.db:add_evaluation(id, cand.result)
  if not ok then self:warn("add_evaluation", eerr) end
  cand.evaluation_store_id = ok or nil
  for _, rec in ipairs(cand.llm_calls or {}) do
    local r = { candidate_id = id }
    for k, v in pairs(rec) do if LLM_KEEP[k] then r[k] = v end end
    local okc, cerr = self.db:add_llm_call(self.run_id, r)
    if not okc then self:warn("add_llm_call", cerr) end
  end
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
