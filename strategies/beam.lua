-- strategies/beam.lua: keep the best k verified candidates, expand each every step.
-- Expansion uses the LLM proposer when one is configured, otherwise the tune proposer
-- (the task's parameters).
local proposers = require("kloop.search.proposers")

local S = {
  name = "beam",
  description = "keep the best k verified candidates and expand each",
  requires = { api = 1 },
  options = {
    { "width", 4, "beam width k" },
    { "expand", 2, "children per beam member per step" },
    { "proposer", "auto", "llm, tune or auto (llm when configured, else tune)" },
  },
}

function S.init(ctx)
  ctx.proposer = proposers.choose(ctx)
  ctx.beam = {}
end

function S.propose(ctx)
  if #ctx.beam == 0 and ctx.baseline and ctx.baseline.result.verdict == "ok" then ctx.beam = { ctx.baseline } end
  local out = proposers.repairs(ctx, {})
  for _, parent in ipairs(ctx.beam) do
    for _, c in ipairs(ctx.proposer:children(ctx, parent, ctx.opts.expand)) do out[#out + 1] = c end
  end
  if #out == 0 then out = ctx.proposer:fresh(ctx, ctx.opts.width) end
  return out
end

function S.on_result(ctx, cand, r)
  proposers.note_broken(ctx, cand, r)
  if r.verdict ~= "ok" then return end
  table.insert(ctx.beam, cand)
  table.sort(ctx.beam, function(a, b) return a.result.time_ms < b.result.time_ms end)
  while #ctx.beam > ctx.opts.width do table.remove(ctx.beam) end
end

return S
