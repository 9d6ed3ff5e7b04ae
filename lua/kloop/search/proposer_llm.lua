-- kloop.search.proposer_llm: the LLM proposer: asks the configured model(s) for children of
-- a parent kernel (optimize; or fix_compile / fix_wrong after a failure), concurrently,
-- and turns each reply into a candidate with its provenance.
--
-- Failures: a refused key (HTTP 401/403) or a spent quota ends the run at once (the
-- strategy's hook raises, the run is failed; nothing else is sent). Any other failed
-- proposal is counted (ctx.llm: ok, failed, streak, last); the driver fails a run whose
-- strategy stopped proposing while its last proposals all failed. Every request is
-- recorded through the session's events (ctx.store:llm_event), tokens and cost
-- included, so --tokens and --money see all of them, used or not.
local llm = require("kloop.llm.session")
local prompt = require("kloop.llm.prompt")
local extract = require("kloop.llm.extract")

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

-- The options that map to endpoint settings (0 or "": the environment or the default).
M.LIMIT_OPTIONS = { llm_timeout = "timeout_s", llm_connect_timeout = "connect_timeout_s",
  llm_idle_timeout = "idle_timeout_s", llm_deadline = "deadline_s", llm_retries = "max_retries" }

-- Endpoint options from the run's options.
function M.config_options(o)
  local c = { model = o.model ~= "" and o.model or nil, llm_url = o.llm_url ~= "" and o.llm_url or nil }
  for opt, k in pairs(M.LIMIT_OPTIONS) do
    if type(o[opt]) == "number" and o[opt] > 0 then c[k] = o[opt] end
  end
  if o.llm_max_reply and o.llm_max_reply ~= "" then
    c.max_reply_bytes = llm.parse_size(o.llm_max_reply)
    if not c.max_reply_bytes then error("--llm-max-reply " .. tostring(o.llm_max_reply) .. ": give a size (bytes, or 512k, 1M)", 0) end
  end
  return c
end

-- A proposer for ctx, or nil, message (nothing configured: the message says how).
function M.new(ctx)
  local o = ctx.opts
  local eps, err = llm.config(M.config_options(o))
  if not eps then return nil, err end
  local self = setmetatable({ name = "llm", eps = eps, templates = {} }, P)
  local session, serr = llm.session({ db = ctx.store and ctx.store.path or nil, no_cache = o.no_cache,
    log = function(ev) self:on_event(ctx, ev) end })
  if not session then return nil, serr end
  self.session = session
  llm.use(session)
  ctx.llm = ctx.llm or { ok = 0, failed = 0, streak = 0, requests = 0 }
  return self
end

-- Session events: accounting of every finished call (used or not) and the store rows.
function P:on_event(ctx, ev)
  if ev.event == "llm_send" then ctx.llm.requests = (ctx.llm.requests or 0) + 1 end
  if ev.event == "llm_done" and ev.usage and not ev.cached then
    ctx.tokens = (ctx.tokens or 0) + (ev.usage.input or 0) + (ev.usage.output or 0)
    ctx.cost = (ctx.cost or 0) + (ev.cost or 0)
  end
  if ctx.store and ctx.store.llm_event then ctx.store:llm_event(ctx, ev) end
end

-- Ends what is still in flight or queued (the run ends): each is recorded cancelled.
function P:close()
  if self.session then self.session:cancel_all() end
  self.ahead = {}
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
      { prompt = { id = tpl.id, version = tpl.version }, compact = function(text) return M.compact(text, ctx.task.entry) end })
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

-- What the cache keeps of a long reply: the kernel extracted from it, fenced, and an
-- excerpt of the prose before it (a 5 MB reply costs a few kB of store).
function M.compact(text, entry)
  local k = extract.extract(text, { entry = entry })
  local head = text:sub(1, 1024):gsub("```.*$", "")
  if not k then return head .. "\n[reply of " .. #text .. " bytes: no kernel; cut to this excerpt]\n" end
  return head .. "\n[reply of " .. #text .. " bytes cut to its kernel]\n\n```" .. (k.lang or "") .. "\n" .. k.source
    .. (k.source:sub(-1) == "\n" and "" or "\n") .. "```\n"
end

-- A failed proposal: counted; an authentication or quota failure stops the run.
local FATAL = { auth = true, quota = true }
function P:failed(ctx, h, why)
  local st = ctx.llm
  st.failed, st.streak, st.last = st.failed + 1, st.streak + 1, tostring(why)
  ctx.failed_proposals = (ctx.failed_proposals or 0) + 1
  if FATAL[h.kind] then
    self:close()
    error(string.format("the LLM %s refused the request: %s", tostring(h.model), tostring(h.reason)), 0)
  end
end

-- While a reply is awaited: the status line (a terminal) or a line every 30 s says so.
function P:waiting(ctx, _h)
  if ctx.opts.quiet or not ctx.show_waiting then return end
  ctx:show_waiting(self.session:waiting())
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
  local tick = function(h) self:waiting(ctx, h) end
  for _, h in ipairs(handles) do
    self.session:wait(h, nil, tick)
    if h.ok then
      local k, why = extract.extract(h.text, { entry = ctx.task.entry })
      if k then
        ctx.llm.ok, ctx.llm.streak = ctx.llm.ok + 1, 0
        -- the call's provenance (model, prompt, sampling, seed, tokens, cost) from the session
        local cand = llm.candidate_fields(h)
        cand.source, cand.proposer, cand.parent = k.source, "llm", h.parent or parent
        cand.template = h.tpl.id
        cand.name = ctx.task.backend == "host" and "llm.c" or "llm.cu"
        out[#out + 1] = cand
      else
        if not ctx.opts.quiet then print("  proposal without a kernel: " .. tostring(why)) end
        self:failed(ctx, h, "no kernel in the reply: " .. tostring(why))
      end
    else
      if not ctx.opts.quiet then print("  proposal failed: " .. tostring(h.reason)) end
      self:failed(ctx, h, h.reason)
    end
  end
  return out
end

function P:fresh(ctx, n)
  return self:children(ctx, ctx.best or ctx.baseline, n)
end

return M
