-- strategies/tune.lua: numeric search over the task's declared parameters (no LLM):
-- exhaustive when the space fits the budget, otherwise random samples then a walk
-- around the best (simulated annealing on the verified time).
local tune = require("kloop.tune")

local S = {
  name = "tune",
  description = "search the task's tunable parameters (-D defines); no network",
  options = {
    { "explore", 0.3, "fraction of the budget spent on random samples before the local walk" },
    { "batch", 4, "candidates proposed per step" },
  },
}

function S.init(ctx)
  ctx.space = tune.space(ctx.task)
  if ctx.space.size == 0 then
    error("task " .. ctx.task.name .. " declares no params: nothing to tune (add params = {NAME = {values}})", 0)
  end
  ctx.seen = {}
  if ctx.space.size <= ctx.opts.budget then
    ctx.queue = ctx.rng:shuffle(tune.all(ctx.space))
  end
  ctx.temperature = 0.2
end

local function fresh(ctx, p)
  if not p then return false end
  local k = tune.key(p)
  if ctx.seen[k] then return false end
  ctx.seen[k] = true
  return true
end

function S.propose(ctx)
  local out = {}
  local n = ctx.opts.batch
  if ctx.queue then
    while #out < n and #ctx.queue > 0 do
      local p = table.remove(ctx.queue)
      if fresh(ctx, p) then out[#out + 1] = tune.candidate(ctx.task, p) end
    end
    return out
  end
  local evaluated = #ctx.history - 1
  for _ = 1, 200 * n do
    if #out >= n then break end
    local p
    if evaluated < ctx.opts.explore * ctx.opts.budget or not ctx.current then
      p = tune.random(ctx.space, ctx.rng)
    else
      -- an unseen neighbour of the current point; a random point once none is left
      local ns = {}
      for _, q in ipairs(tune.neighbours(ctx.space, ctx.current.defines or {})) do
        if not ctx.seen[tune.key(q)] then ns[#ns + 1] = q end
      end
      p = #ns > 0 and ctx.rng:pick(ns) or tune.random(ctx.space, ctx.rng)
    end
    if fresh(ctx, p) then out[#out + 1] = tune.candidate(ctx.task, p, ctx.current) end
  end
  return out
end

-- Annealing: move to a worse point with probability exp(-(t - t_cur)/(T * t_cur)).
function S.on_result(ctx, cand, r)
  if r.verdict ~= "ok" then return end
  local cur = ctx.current
  if not cur then ctx.current = cand return end
  -- draw every time, so the random stream does not depend on the measured times
  local u = ctx.rng:float()
  local dt = (r.time_ms - cur.result.time_ms) / cur.result.time_ms
  if dt < 0 or u < math.exp(-dt / ctx.temperature) then ctx.current = cand end
  ctx.temperature = ctx.temperature * 0.95
end

return S
