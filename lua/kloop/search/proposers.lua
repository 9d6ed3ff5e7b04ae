-- kloop.search.proposers: what makes candidates for the built-in strategies: `tune` (the
-- task's parameters, no network) and, when an LLM is configured, `llm`.
local tune = require("kloop.search.tune")

local M = {}

-- Tune proposer: children are unseen neighbours of the parent's parameter point.
local Tune = {}
Tune.__index = Tune

function M.tune(ctx)
  local space = tune.space(ctx.task)
  if space.size == 0 then return nil, "the task declares no params to tune" end
  return setmetatable({ space = space, seen = {}, name = "tune" }, Tune)
end

function Tune:mark(p)
  local k = tune.key(p)
  if self.seen[k] then return false end
  self.seen[k] = true
  return true
end

function Tune:children(ctx, parent, n)
  local out = {}
  local base = parent and parent.defines
  if not base then
    -- the baseline: its defaults are whatever the source defines; start anywhere
    return self:fresh(ctx, n)
  end
  local ns = ctx.rng:shuffle(tune.neighbours(self.space, base))
  for _, p in ipairs(ns) do
    if #out >= n then break end
    if self:mark(p) then out[#out + 1] = tune.candidate(ctx.task, p, parent) end
  end
  return out
end

function Tune:fresh(ctx, n)
  local out = {}
  for _ = 1, 20 * n do
    if #out >= n then break end
    local p = tune.random(self.space, ctx.rng)
    if p and self:mark(p) then out[#out + 1] = tune.candidate(ctx.task, p) end
  end
  return out
end

-- Compile repairs for the built-in strategies: a candidate that does not compile (or
-- is rejected) goes back to the model with its compiler log (the fix_compile template),
-- at most twice down one line of repairs; the tune proposer has no repair. A strategy
-- calls note_broken from on_result and repairs(ctx, out[, opts]) from propose, which
-- appends the repair of the oldest broken candidate to `out`.
function M.note_broken(ctx, cand, r)
  if (r.verdict == "compile_error" or r.verdict == "rejected") and ctx.proposer and ctx.proposer.name == "llm"
    and (cand.repairs or 0) < 2 and cand.source then
    ctx.broken = ctx.broken or {}
    ctx.broken[#ctx.broken + 1] = cand
  end
end

function M.repairs(ctx, out, opts)
  local broken = ctx.broken and table.remove(ctx.broken, 1)
  if not broken then return out end
  local o = { template = "fix_compile" }
  for k, v in pairs(opts or {}) do o[k] = v end
  for _, c in ipairs(ctx.proposer:children(ctx, broken, 1, o)) do
    c.repairs = (broken.repairs or 0) + 1
    out[#out + 1] = c
  end
  return out
end

-- Picks the proposer an option names; "auto" takes the LLM when one is configured
-- (llm.new says whether one is). The LLM proposer is required plainly: a load error in
-- it is a bug and shows, it never turns into a quiet search with tune.
function M.choose(ctx)
  local want = ctx.opts.proposer or "auto"
  if want == "llm" or want == "auto" then
    local p, err = require("kloop.search.proposer_llm").new(ctx)
    if p then return p end
    if want == "llm" then error(err, 0) end
  end
  local p, err = M.tune(ctx)
  if not p then
    error(err .. "; configure an LLM (OPENAI_API_KEY, ANTHROPIC_API_KEY or KLOOP_LLM_URL) to search source changes", 0)
  end
  return p
end

return M
