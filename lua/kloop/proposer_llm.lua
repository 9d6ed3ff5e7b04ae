-- kloop.proposer_llm: the LLM proposer: asks the configured model(s) for children of
-- a parent kernel (optimize; or fix_compile / fix_wrong after a failure), concurrently,
-- and turns each reply into a candidate with its provenance.
local llm = require("kloop.llm")
local prompt = require("kloop.prompt")
local extract = require("kloop.llm_extract")

local M = {}
local P = {}
P.__index = P

-- The template for a parent: a failure is repaired first, a success is sped up.
function M.template_for(parent)
  local v = parent and parent.result and parent.result.verdict
  if v == "compile_error" or v == "rejected" then return "fix_compile" end
  if v and v ~= "ok" and v ~= "too_fast" then return "fix_wrong" end
  return "optimize"
end

-- A proposer for ctx, or nil, message (nothing configured: the message says how).
function M.new(ctx)
  local o = ctx.opts
  local eps, err = llm.config({ model = o.model ~= "" and o.model or nil, llm_url = o.llm_url ~= "" and o.llm_url or nil })
  if not eps then return nil, err end
  local session, serr = llm.session({ db = ctx.store and ctx.store.path or nil, no_cache = o.no_cache })
  if not session then return nil, serr end
  llm.use(session)
  return setmetatable({ name = "llm", eps = eps, session = session, templates = {} }, P)
end

function P:template(id)
  if not self.templates[id] then
    local tpl, err = prompt.load(id)
    if not tpl then error(err, 0) end
    self.templates[id] = tpl
  end
  return self.templates[id]
end

-- Asks for n children of parent. opts: template (id), endpoint (one of self.eps).
-- Returns the candidates whose replies held a kernel (failures are counted in ctx).
-- Sends n requests for children of parent; returns the pending handles.
function P:send(ctx, parent, n, opts)
  opts = opts or {}
  local tpl = self:template(opts.template or M.template_for(parent))
  local context = prompt.context({ task = ctx.task, gpu = ctx.ev.gpu, parent = parent, best = ctx.best,
    baseline = ctx.baseline, attempts = ctx.history })
  local messages, merr = prompt.messages(tpl, context)
  if not messages then error(merr, 0) end
  local handles = {}
  for i = 1, n do
    local params = { temperature = ctx.opts.temperature or 0.7, seed = ctx.rng:int(1, 2^31 - 1) }
    handles[i] = self.session:request(opts.endpoint and { opts.endpoint } or self.eps, messages, params,
      { prompt = { id = tpl.id, version = tpl.version } })
    handles[i].params = params
    handles[i].tpl = tpl
    handles[i].parent = parent
  end
  self:pump()
  return handles
end

-- Drives the HTTP transfers without waiting (the driver calls it between evaluations).
function P:pump()
  for _ = 1, 4 do
    local done = self.session:poll(0)
    if #done == 0 then break end
    for _, h in ipairs(done) do h.collected_early = true end
  end
end

-- Pipelining: ask now for the children the next step will most likely want (of the
-- best so far), so the model thinks while the GPU evaluates the current batch.
-- Keeps n requests in flight ahead of need (topping up what earlier calls left).
function P:prefetch(ctx, parent, n)
  if not parent then return end
  self.ahead = self.ahead or {}
  local missing = n - #self.ahead
  if missing <= 0 then return end
  for _, h in ipairs(self:send(ctx, parent, missing)) do self.ahead[#self.ahead + 1] = h end
end

function P:children(ctx, parent, n, opts)
  opts = opts or {}
  local handles = {}
  -- requests sent ahead are used first, even when the best moved on meanwhile: they
  -- are real children of an earlier best, and their lineage says so
  if self.ahead and not opts.template and not opts.endpoint then
    while #handles < n and #self.ahead > 0 do handles[#handles + 1] = table.remove(self.ahead, 1) end
  end
  if #handles < n then
    for _, h in ipairs(self:send(ctx, parent, n - #handles, opts)) do handles[#handles + 1] = h end
  end
  local out = {}
  for _, h in ipairs(handles) do
    self.session:wait(h)
    local tpl = h.tpl
    ctx.tokens = (ctx.tokens or 0) + ((h.usage and not h.cached) and (h.usage.input + h.usage.output) or 0)
    ctx.cost = (ctx.cost or 0) + (h.cost or 0)
    local rec = llm.call_record(h)
    if h.ok then
      local k, why = extract.extract(h.text, { entry = ctx.task.entry })
      if k then
        out[#out + 1] = { source = k.source, proposer = "llm", parent = h.parent or parent, model = h.model,
          prompt_id = tpl.id, prompt_hash = tpl.version, sampling = h.params, llm_seed = h.params.seed,
          tokens_in = h.usage and h.usage.input, tokens_out = h.usage and h.usage.output, cost = h.cost,
          llm_calls = { rec }, template = tpl.id, endpoint = h.endpoint and h.endpoint.name, name = "llm.cu" }
      else
        ctx.failed_proposals = (ctx.failed_proposals or 0) + 1
        if not ctx.opts.quiet then print("  proposal without a kernel: " .. tostring(why)) end
      end
    else
      ctx.failed_proposals = (ctx.failed_proposals or 0) + 1
      if not ctx.opts.quiet then print("  proposal failed: " .. tostring(h.reason)) end
    end
  end
  return out
end

function P:fresh(ctx, n)
  return self:children(ctx, ctx.best or ctx.baseline, n)
end

return M
