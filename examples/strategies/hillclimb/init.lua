-- examples/strategies/hillclimb/init.lua: a strategy package (docs/SCRIPTING.md, "Sharing
-- strategies"): hill climbing over the task's parameters; how the next points are chosen
-- lives in the module beside it (moves.lua), which `require("moves")` finds.
-- usage: kloop examples/strategies/hillclimb TARGET [--batch N] [--seed S]
--        KLOOP_PATH=examples/strategies kloop hillclimb TARGET
local moves = require("moves")

local S = {
  name = "hillclimb",
  description = "climb from a random point to the best of its unseen neighbours",
  requires = { api = 1 },
  options = { { "batch", 2, "neighbours of the best evaluated per step" } },
}

function S.init(ctx)
  ctx.space = kloop.tune.space(ctx.task)
  if ctx.space.size == 0 then error("this task has no params to climb", 0) end
  ctx.seen = {}
end

function S.propose(ctx)
  local here = ctx.best and ctx.best.defines
  local points = moves.next(ctx.space, here, ctx.seen, ctx.rng, ctx.opts.batch)
  local out = {}
  for i, p in ipairs(points) do out[i] = kloop.tune.candidate(ctx.task, p, ctx.best) end
  return out -- empty: every point was seen, the run ends
end

function S.done(ctx)
  if ctx.best and ctx.best.defines then print("hillclimb best: " .. kloop.tune.key(ctx.best.defines)) end
end

return S
