-- strategies/bandit.lua: a multi-armed bandit over prompt templates x models (UCB1),
-- each arm credited by the verified improvement it brought over a sliding window.
local S = {
  name = "bandit",
  description = "choose among prompt templates x models by their recent verified improvements (UCB1)",
  requires = { api = 1 },
  options = {
    { "window", 8, "results per arm that count (sliding window)" },
    { "explore_c", 0.5, "UCB exploration constant" },
    { "templates", "optimize", "comma-separated prompt templates that form arms with each model" },
  },
}

function S.init(ctx)
  local p = kloop.proposers.choose(ctx)
  if p.name ~= "llm" then
    error("bandit chooses among prompts and models: configure an LLM (OPENAI_API_KEY, ANTHROPIC_API_KEY or KLOOP_LLM_URL, and --model)", 0)
  end
  ctx.proposer = p
  ctx.arms = {}
  for t in ctx.opts.templates:gmatch("[^,%s]+") do
    for _, ep in ipairs(p.eps) do
      ctx.arms[#ctx.arms + 1] = { template = t, endpoint = ep, name = t .. "@" .. ep.model, rewards = {}, pulls = 0 }
    end
  end
  ctx.pulls = 0
end

local function mean(t)
  if #t == 0 then return 0 end
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  return s / #t
end

local function choose(ctx)
  for _, a in ipairs(ctx.arms) do if a.pulls == 0 then return a end end
  local best, score = nil, -math.huge
  for _, a in ipairs(ctx.arms) do
    local u = mean(a.rewards) + ctx.opts.explore_c * math.sqrt(2 * math.log(ctx.pulls) / a.pulls)
    if u > score then best, score = a, u end
  end
  return best
end

function S.propose(ctx)
  local arm = choose(ctx)
  arm.pulls = arm.pulls + 1
  ctx.pulls = ctx.pulls + 1
  local parent = ctx.best or ctx.baseline
  local out = ctx.proposer:children(ctx, parent, 1, { template = arm.template, endpoint = arm.endpoint })
  for _, c in ipairs(out) do c.arm = arm c.best_before = parent and parent.result and parent.result.time_ms end
  -- a repair uses the arm's model and earns it nothing either way (no arm on it)
  out = kloop.proposers.repairs(ctx, out, { endpoint = arm.endpoint })
  if #out == 0 then
    -- a pull that produced nothing earns nothing
    table.insert(arm.rewards, 0)
    if #arm.rewards > ctx.opts.window then table.remove(arm.rewards, 1) end
    return { { skip = true } }
  end
  return out
end

-- Reward: the relative verified improvement over the best before this pull.
function S.on_result(ctx, cand, r)
  kloop.proposers.note_broken(ctx, cand, r)
  local arm = cand.arm
  if not arm then return end
  local reward = 0
  if r.verdict == "ok" and cand.best_before then
    reward = math.max(0, (cand.best_before - r.time_ms) / cand.best_before)
  end
  table.insert(arm.rewards, reward)
  if #arm.rewards > ctx.opts.window then table.remove(arm.rewards, 1) end
end

function S.done(ctx)
  if ctx.opts.quiet then return end
  for _, a in ipairs(ctx.arms or {}) do
    print(string.format("arm %-32s pulls %3d  mean reward %.3f", a.name, a.pulls, mean(a.rewards)))
  end
end

return S
