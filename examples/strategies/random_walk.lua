-- examples/strategies/random_walk.lua: the smallest useful strategy (docs/SCRIPTING.md):
-- random points of the task's parameter space, one at a time, keeping the best.
-- usage: kloop examples/strategies/random_walk.lua TARGET [--budget N] [--seed S]
local S = {
  name = "random_walk",
  description = "evaluate random parameter points of the task, one at a time",
  options = { { "retries", 50, "draws to find an unseen point before giving up" } },
}

function S.init(ctx)
  assert(kloop.api_version >= 1, "needs kloop api_version 1")
  ctx.space = kloop.tune.space(ctx.task)
  if ctx.space.size == 0 then error("this task has no params to walk", 0) end
  ctx.seen = {}
end

function S.propose(ctx)
  for _ = 1, ctx.opts.retries do
    local p = kloop.tune.random(ctx.space, ctx.rng)
    local key = p and kloop.tune.key(p)
    if key and not ctx.seen[key] then
      ctx.seen[key] = true
      return { kloop.tune.candidate(ctx.task, p) }
    end
  end
  return nil -- nothing new: the run ends
end

function S.on_result(ctx, _cand, result)
  if result.verdict ~= "ok" and not ctx.opts.quiet then
    print("  rejected: " .. result.reason)
  end
end

function S.done(ctx)
  if ctx.best then print("random_walk best: " .. kloop.tune.key(ctx.best.defines or {})) end
end

return S
