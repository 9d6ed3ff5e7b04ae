-- bench/search_sim.lua: tune's search methods replayed on recorded and synthetic
-- landscapes (no GPU): for each space, budget max(10% of the valid points, 16), many
-- seeds, how often the best found is within 2% of the exhaustive optimum.
-- usage: kloop bench/search_sim.lua [--seeds N] [--methods model,random,anneal] [--batch B] [--picks FILE]
--        [--only NAME] [--budgets 16,44,89] [--json FILE] [--favour off|EI,MEAN] [--ahead N]
-- After each propose the driver's compile-ahead call, upcoming(ctx, N) (N = 16, the
-- H200 machine's compilers), and its think(ctx) are made too: the "guessed" column is the share of the
-- proposals after the first batch that the guess before them named (compiled ahead:
-- no wait for a compiler). --favour sets how much the model's picks prefer those
-- points (kloop.search.surrogate FAVOUR_EI, FAVOUR_MEAN; off: never). --lag off: the
-- model chooses each batch after the results of the one before (tune's --ahead off);
-- AHEAD_BATCH=N in the environment sets tune's --ahead-batch (0, its default: auto),
-- AHEAD_AFTER=N its --ahead-after (auto); --fill K its --fill, every batch filled
-- (FILL_PICK=random: the filled points drawn from the offered ones, else their top).
-- --picks FILE: every run's evaluated points in order, a line per run (landscape, budget,
-- method, seed, then the points' keys), to show that a change leaves the picks as they were.
-- The strategy's hooks (strategies/tune.lua) run exactly as the driver calls them:
-- init, then propose / evaluate each / on_result until the budget is spent; an
-- evaluation is a look-up in the landscape (a point it lacks is a failed candidate).
local rng = require("kloop.search.rng")
local tune = require("kloop.search.tune")
local util = require("kloop.util")
local cjson = require("cjson")

local seeds, methods, batch, only, json_out, budgets = 20, { "model", "random", "anneal" }, 4, nil, nil, nil
local ahead, lag, fill = 16, "on", 0
-- (LEAD_DEPTH: see the run loop; the share printed after each row)
local lead_depth, lead_hits, lead_n = tonumber(os.getenv("LEAD_DEPTH") or "0"), 0, 0
local picks_out
local surrogate = require("kloop.search.surrogate")
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--seeds" then seeds = tonumber(arg[i + 1]) i = i + 1
  elseif a == "--methods" then methods = util.split(arg[i + 1], ",") i = i + 1
  elseif a == "--batch" then batch = tonumber(arg[i + 1]) i = i + 1
  elseif a == "--only" then only = arg[i + 1] i = i + 1
  elseif a == "--json" then json_out = arg[i + 1] i = i + 1
  elseif a == "--budgets" then budgets = util.split(arg[i + 1], ",") i = i + 1
  elseif a == "--ahead" then ahead = tonumber(arg[i + 1]) i = i + 1
  elseif a == "--lag" then lag = arg[i + 1] i = i + 1
  elseif a == "--fill" then fill = tonumber(arg[i + 1]) i = i + 1
  elseif a == "--picks" then picks_out = assert(io.open(arg[i + 1], "w")) i = i + 1
  elseif a == "--favour" then
    local v = arg[i + 1]
    i = i + 1
    if v == "off" then surrogate.FAVOUR_EI, surrogate.FAVOUR_MEAN = math.huge, -math.huge
    else
      local e, m = v:match("^([%d.]+),([%d.]+)$")
      if not e then error("--favour wants off or EI,MEAN (e.g. 0.5,0.02)") end
      surrogate.FAVOUR_EI, surrogate.FAVOUR_MEAN = tonumber(e), tonumber(m)
    end
  else error("unknown argument " .. a) end
  i = i + 1
end

-- A landscape: a task-like table (params, constraint, source) and time_of(point).
local function recorded(name, path, names)
  local times, params = {}, {}
  for _, n in ipairs(names) do params[n] = {} end
  local seen = {}
  for line in io.lines(path) do
    if not line:match("^#") and line:match("%S") then
      local f = util.split(line, "\t")
      local p = {}
      for k, n in ipairs(names) do
        p[n] = tonumber(f[k])
        seen[n] = seen[n] or {}
        if not seen[n][p[n]] then seen[n][p[n]] = true table.insert(params[n], p[n]) end
      end
      times[tune.key(p)] = tonumber(f[#names + 1])
    end
  end
  for _, n in ipairs(names) do table.sort(params[n]) end
  return { name = name, task = { params = params, constraint = function(p) return times[tune.key(p)] ~= nil end,
    source = "", name = name }, time_of = function(p) return times[tune.key(p)] end }
end

-- A synthetic landscape shaped like a kernel's: a smooth bowl with an interaction,
-- a ripple, and a per-point jitter of a few percent (hardware discontinuities); a
-- slice of it invalid (the constraint) when `holes` is set.
local function synthetic(name, dims, levels, holes)
  local params, names = {}, {}
  for d = 1, dims do
    local n = "P" .. d
    names[d] = n
    params[n] = {}
    for v = 1, levels do params[n][v] = 2 ^ (v - 1) end
  end
  local centre = {}
  for d = 1, dims do centre[d] = ((d * 0.37) % 1) * 0.8 + 0.1 end
  local function x(p, d) return (math.log(p["P" .. d]) / math.log(2)) / (levels - 1) end
  local function jitter(p)
    local k = tune.key(p) .. name
    local h = require("kloop.core.ffi").C.kl_hash64(k, #k, 1)
    return tonumber(h % 100000ULL) / 100000
  end
  local function valid(p) return not holes or (x(p, 1) + x(p, 2) <= 1.5) end
  return { name = name, task = { params = params, constraint = valid, source = "", name = name },
    time_of = function(p)
      if not valid(p) then return nil end
      local t = 1
      for d = 1, dims do t = t + (d % 2 == 1 and 3 or 1.5) * (x(p, d) - centre[d]) ^ 2 end
      t = t + 2 * (x(p, 1) - x(p, 2)) ^ 2 + 0.15 * math.abs(math.sin(9 * x(p, dims)))
      return t * (1 + 0.06 * jitter(p))
    end }
end

local landscapes = {
  recorded("gemm_tiled (H200)", "bench/landscapes/gemm_tiled_h200.tsv", { "BM", "BN", "BK", "TM", "TN" }),
  synthetic("synthetic 8x8", 2, 8, false),
  synthetic("synthetic 10^3, holes", 3, 10, true),
  synthetic("synthetic 10^4", 4, 10, false),
}

local strategy = dofile("strategies/tune.lua")

local function run(land, method, seed, budget)
  local ctx = { task = land.task, history = {}, rng = rng.new(seed),
    opts = { budget = budget, batch = batch, method = method, init = 0, stop_ei = 0.0005, explore = 0.3, quiet = true,
      ahead = lag, ahead_batch = tonumber(os.getenv("AHEAD_BATCH") or "0"), fill = fill,
      ahead_after = os.getenv("AHEAD_AFTER") or "auto" } }
  ctx.history[1] = { proposer = "baseline", result = { verdict = "ok", time_ms = 1e9 } }
  strategy.init(ctx)
  local pick_rng = rng.new(seed + 7)
  local evaluated, best = 0, math.huge
  local guessed, hits, after_first = nil, 0, 0
  local picked = {}
  local guesses = {}
  while evaluated < budget do
    local cands = strategy.propose(ctx)
    if #cands == 0 then break end
    if lead_depth > 0 and #guesses >= 2 then
      local g2 = guesses[#guesses - 1]
      for _, c in ipairs(cands) do
        lead_n = lead_n + 1
        if g2[tune.key(c.defines)] then lead_hits = lead_hits + 1 end
      end
    end
    if guessed then
      for _, c in ipairs(cands) do
        after_first = after_first + 1
        if guessed[tune.key(c.defines)] then hits = hits + 1 end
      end
    end
    guessed = {}
    if ahead > 0 and strategy.upcoming then
      for _, c in ipairs(strategy.upcoming(ctx, ahead)) do guessed[tune.key(c.defines)] = true end
    end
    -- and its think call, during the batch's first evaluation: what it returns compiles too
    local thought = strategy.think and strategy.think(ctx) or {}
    for _, c in ipairs(thought) do guessed[tune.key(c.defines)] = true end
    -- LEAD_DEPTH=D: the guess the driver queues after think (up to D past think's batch),
    -- kept per step, to count how many picks a guess named two steps before their batch
    if lead_depth > 0 and strategy.upcoming then
      local g = {}
      for _, c in ipairs(strategy.upcoming(ctx, #thought + lead_depth)) do g[tune.key(c.defines)] = true end
      guesses[#guesses + 1] = g
    end
    -- --fill K: the worst case of the driver's filling, every batch waiting: the spares
    -- think offers (at most K) run after the batch, within the room its next one leaves
    -- (FILL_PICK=random: whichever of the offered are compiled first, modelled as a
    -- random draw among them; else the model's top ones)
    local spare, offered = {}, {}
    for _, c in ipairs(thought.spare or {}) do offered[#offered + 1] = c end
    local max = math.min(fill, (thought.spare or {}).max or fill)
    while #spare < max and #offered > 0 do
      local k = os.getenv("FILL_PICK") == "random" and pick_rng:int(1, #offered) or 1
      spare[#spare + 1] = table.remove(offered, k)
    end
    local list = {}
    for _, c in ipairs(cands) do list[#list + 1] = c end
    for k, c in ipairs(spare) do
      if evaluated + #cands + k + #thought <= budget then list[#list + 1] = c end
    end
    for _, c in ipairs(list) do
      if evaluated >= budget then break end
      evaluated = evaluated + 1
      picked[#picked + 1] = tune.key(c.defines)
      local t = land.time_of(c.defines)
      c.result = t and { verdict = "ok", time_ms = t } or { verdict = "launch_error" }
      ctx.history[#ctx.history + 1] = c
      if t and t < best then best = t ctx.best = c end
      if strategy.on_result then strategy.on_result(ctx, c, c.result) end
    end
  end
  if picks_out then
    picks_out:write(string.format("%s\t%d\t%s\t%d\t%s\n", land.name, budget, method, seed, table.concat(picked, " ")))
  end
  return best, evaluated, hits, after_first
end

local rows, raw = {}, {}
for _, land in ipairs(landscapes) do
  if not only or land.name:find(only, 1, true) then
    local space = tune.space(land.task)
    local all = tune.all(space)
    local opt = math.huge
    for _, p in ipairs(all) do opt = math.min(opt, land.time_of(p)) end
    for _, budget in ipairs(budgets or { math.max(math.ceil(0.1 * #all), 16) }) do
    budget = tonumber(budget)
    for _, method in ipairs(methods) do
      local within, ratios, used, hits, later = 0, {}, 0, 0, 0
      local t0 = os.clock()
      for s = 1, seeds do
        local best, n, h, l = run(land, method, 1000 + s, budget)
        hits, later = hits + h, later + l
        ratios[s] = best / opt
        used = used + n
        if best <= 1.02 * opt then within = within + 1 end
      end
      table.sort(ratios)
      local mean = 0
      for _, r in ipairs(ratios) do mean = mean + r / seeds end
      rows[#rows + 1] = string.format("%-24s %6d %6d  %-8s %5.0f%%  %8.4f  %8.4f  %8.4f  %6.1f  %6.0f%%  %6.2f s", land.name, #all, budget,
        method, 100 * within / seeds, ratios[math.ceil(seeds / 2)], mean, ratios[seeds], used / seeds,
        later > 0 and 100 * hits / later or 0, os.clock() - t0)
      raw[#raw + 1] = { landscape = land.name, points = #all, budget = budget, method = method, seeds = seeds,
        within_2pct = within / seeds, median_ratio = ratios[math.ceil(seeds / 2)], mean_ratio = mean, worst_ratio = ratios[seeds],
        mean_evaluations = used / seeds, guessed = later > 0 and hits / later or nil }
      if lead_depth > 0 then
        rows[#rows] = rows[#rows] .. string.format("  lead %d: %.0f%% of %d", lead_depth, 100 * lead_hits / math.max(1, lead_n), lead_n)
        lead_hits, lead_n = 0, 0
      end
      io.stderr:write(rows[#rows], "\n")
    end
    end
  end
end
print(string.format("%-24s %6s %6s  %-8s %6s  %8s  %8s  %8s  %6s  %7s  %8s", "landscape", "valid", "budget", "method", "<=2%",
  "median", "mean", "worst", "evals", "guessed", "cpu"))
for _, r in ipairs(rows) do print(r) end
io.stdout:flush()
if json_out then util.write_file(json_out, cjson.encode(raw)) end
if picks_out then picks_out:close() end
