-- strategies/greedy.lua: always improve the best verified candidate so far.
local proposers = require("kloop.search.proposers")

local S = {
  name = "greedy",
  description = "expand the best verified candidate so far",
  requires = { api = 1 },
  options = {
    { "batch", 2, "children of the best per step" },
    { "proposer", "auto", "llm, tune or auto (llm when configured, else tune)" },
  },
}

function S.init(ctx) ctx.proposer = proposers.choose(ctx) end

function S.propose(ctx)
  local best = ctx.best or ctx.baseline
  local out = ctx.proposer:children(ctx, best, ctx.opts.batch)
  if #out == 0 then out = ctx.proposer:fresh(ctx, ctx.opts.batch) end
  return proposers.repairs(ctx, out)
end

function S.on_result(ctx, cand, r) proposers.note_broken(ctx, cand, r) end

return S
