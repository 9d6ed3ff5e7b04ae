-- strategies/tune.lua: numeric search over the task's declared parameters (no LLM):
-- exhaustive when the valid space fits the budget; otherwise, by default, a model-based
-- search (a random forest over the parameters, expected improvement over the points not
-- yet evaluated: kloop.surrogate) that uses every evaluation from the first; or random
-- samples, or random samples then a walk around the best (simulated annealing).
local tune = require("kloop.search.tune")
local surrogate = require("kloop.search.surrogate")

-- Choosing one batch ahead starts once this many candidates are evaluated (the default
-- of --ahead-after): a small search needs each result before its next choice more than
-- it needs the GPU busy (bench/search_sim.lua, 40 seeds: at a budget of 16 on 8x8, 80% within 2% choosing
-- after each result, 63% one batch ahead from the first; from 16 on, gemm_tiled at 45
-- and 89 and 10^3 at 85 find what they find choosing after each result). A search of
-- 80 or more starts at 8: its first model batches compile while the random points run
-- (H200, gemm_tiled model 100, seeds 7, 3, 5, empty caches: 75-78% GPU busy against
-- 66-70%, compile waits 0.3-0.7 s against 1.0-2.7 s; search_sim with fill: gemm_tiled at
-- 80 95% within 2% against 93%, at 89 and 100 100% either way, 10^3 at 85 100%; at 64 it
-- would be 85% against 90%).
local AHEAD_AFTER, AHEAD_AFTER_LARGE = 16, 8

local S = {
  name = "tune",
  description = "search the task's tunable parameters (-D defines); no network",
  requires = { api = 1 },
  options = {
    { "method", "model", "model (random forest + expected improvement), anneal, random, or exhaustive" },
    { "init", 0, "random points before the model takes over (0: 2 x parameters, at least 6, at most budget / 4)" },
    { "stop_ei", 0.0005, "model: stop when the best expected improvement (in log time) stays below this twice" },
    { "explore", 0.3, "anneal: fraction of the budget spent on random samples before the local walk" },
    { "batch", 4, "candidates proposed per step" },
    { "ahead", "on", "model: choose each batch one step ahead, so it compiles while the one before runs: on or off" },
    { "ahead_after", "auto", "model: evaluations (those carried past a batch still compiling included) before each"
      .. " batch is chosen one step ahead (--ahead on): auto (8 where the budget is 80 or more, else 16) or a number" },
    { "ahead_batch", 0, "model, choosing ahead: candidates per batch (0: three times --batch where the budget is 64"
      .. " or more, else --batch)" },
    -- (search_sim, every batch filled, gemm_tiled: at 89 100% within 2% with 0, 2 or 4;
    -- at 45 88% with 0, 83% with 2, 80% with 4: a small search keeps its picks; 20 seeds,
    -- every batch filled: at 64, 2 keeps gemm_tiled at 100% and 10^4 at 25% where 4-12
    -- give 90-95% and 15%; at 100 and 200, 2 to 8 the same share on gemm_tiled and 10^3
    -- (100%). 8 at a budget of 100 was tried on the H200 (round11b): 0-2 points filled a
    -- wait either way, no gain, so auto stays 2)
    { "fill", "auto", "model, choosing ahead: at most this many of the model's next points a batch waiting for"
      .. " its compilers may run meanwhile: auto (2 where the budget is 64 or more, else 0) or a number"
      .. " (0: none, so the same seed and times give the same run)" },
    -- the evaluation cascade (docs/TASKS.md, "Stages") pays where most points are far from
    -- the optimum (random or exhaustive search of a wide space: 1.8-3.1x candidates per
    -- minute on the host); behind the model most proposals are near the best and get the
    -- full protocol anyway (on the H200: 36.8 against 55.6 per minute), so it is off
    { "cascade", "off", "screen each candidate first and fully evaluate only those worth it: on or off" },
  },
}

local METHODS = { model = true, anneal = true, random = true, exhaustive = true }


-- Valid spaces up to this many points are enumerated (exhaustive runs); the model
-- scores at most POOL of them per step (all of a smaller space).
local ENUMERATE, POOL = 200000, 2000

function S.init(ctx)
  ctx.space = tune.space(ctx.task)
  if ctx.space.size == 0 then
    error("task " .. ctx.task.name .. " declares no params: nothing to tune (add params = {NAME = {values}})", 0)
  end
  local method = ctx.opts.method
  if not METHODS[method] then
    error("--method must be model, anneal, random or exhaustive, not " .. tostring(method), 0)
  end
  if ctx.opts.ahead ~= nil and ctx.opts.ahead ~= "on" and ctx.opts.ahead ~= "off" then
    error("--ahead must be on or off, not " .. tostring(ctx.opts.ahead), 0)
  end
  local fill = ctx.opts.fill == nil and 0 or ctx.opts.fill == "auto" and (ctx.opts.budget >= 64 and 2 or 0)
    or tonumber(ctx.opts.fill)
  if not fill or fill < 0 or fill ~= math.floor(fill) then
    error("--fill must be auto or a whole number of candidates (0: none), not " .. tostring(ctx.opts.fill), 0)
  end
  ctx.fill = fill
  local aa = (ctx.opts.ahead_after == nil or ctx.opts.ahead_after == "auto")
    and (ctx.opts.budget >= 80 and AHEAD_AFTER_LARGE or AHEAD_AFTER) or tonumber(ctx.opts.ahead_after)
  if not aa or aa < 0 or aa ~= math.floor(aa) then
    error("--ahead-after must be auto or a whole number of evaluations, not " .. tostring(ctx.opts.ahead_after), 0)
  end
  ctx.ahead_after = aa
  local ab = tonumber(ctx.opts.ahead_batch or 0)
  if not ab or ab < 0 or ab ~= math.floor(ab) then
    error("--ahead-batch must be 0 (auto) or a whole number of candidates, not " .. tostring(ctx.opts.ahead_batch), 0)
  end
  ctx.seen = {}
  if ctx.space.size <= ENUMERATE then ctx.valid = tune.all(ctx.space) end
  if method == "exhaustive" and not ctx.valid then
    error(string.format("the space has %d points: too many to enumerate (at most %d)", ctx.space.size, ENUMERATE), 0)
  end
  if ctx.valid and (method == "exhaustive" or #ctx.valid <= ctx.opts.budget) then
    -- (the valid points themselves, shuffled: with a queue, propose never reads ctx.valid)
    ctx.queue = ctx.rng:shuffle(ctx.valid)
  end
  ctx.temperature = 0.2
  -- the walk's acceptance draws have a generator of their own, so the proposals' draws
  -- do not depend on how many results came in (S.upcoming repeats them exactly)
  -- (seeded from the run's generator without drawing from it: the proposals' stream is
  -- the one it was before the walk had its own)
  ctx.walk_rng = ctx.rng:derive(0x77616C6BULL)
  ctx.encode = surrogate.encoder(ctx.space)
end

local function fresh(ctx, p)
  if not p then return false end
  local k = tune.key(p)
  if ctx.seen[k] then return false end
  ctx.seen[k] = true
  return true
end

-- The time the search learns from. With the cascade on every tune point is screened,
-- so the screened median (bench size, a few cold repetitions) is the one measure every
-- point has: a promoted point's full median is more precise but would mix two
-- protocols in one model. The best is still the driver's, from full evaluations only.
local function time_of(r)
  local s = type(r.screen) == "table" and r.screen.time_ms
  return s or r.time_ms
end
S.time_of = time_of

-- What the search has learnt: {defines, proposer, t} per evaluated candidate (t nil for
-- a failure). A choice deferred while a batch runs (S.think) reads the copy taken when
-- that batch was proposed (ctx.choosing.learnt), so results that come in, or that a
-- sentinel trip rewrites in place, after that do not reach it: the same data whenever
-- the choice is made.
local function learnt(ctx)
  if ctx.choosing then return ctx.choosing.learnt end
  local out = {}
  for _, c in ipairs(ctx.history) do
    if c.defines and c.result then
      local t = c.result.verdict == "ok" and time_of(c.result) or nil
      out[#out + 1] = { defines = c.defines, proposer = c.proposer, t = t }
    end
  end
  return out
end

-- The model's data (from learnt): every evaluated point (log of its median; a failure
-- counts as twice the slowest verified time, so the model learns where the space does
-- not work).
local function observations(ctx, known)
  local X, y, fails = {}, {}, {}
  local worst = -math.huge
  for _, c in ipairs(known) do
    if c.proposer == "tune" then
      if c.t then
        X[#X + 1], y[#y + 1] = ctx.encode(c.defines), math.log(c.t)
        worst = math.max(worst, y[#y])
      else
        fails[#fails + 1] = ctx.encode(c.defines)
      end
    end
  end
  for _, x in ipairs(fails) do X[#X + 1], y[#y + 1] = x, (worst > -math.huge and worst or 0) + math.log(2) end
  return X, y
end

-- The random points the model starts from (its init design): want of them, drawn in
-- one go at the first choice that needs them (the draws a batch-by-batch drawing would
-- make, in the same order), then handed out a batch at a time (ctx.init_next), so the
-- next batch of them is known before the results of this one (S.think names it). On a
-- copy of the context (on_copies) the draws and the count are the copy's.
local function init_design(ctx, want)
  if not ctx.init_points then
    local pts, taken = {}, {}
    for _ = 1, 200 * want do
      if #pts >= want then break end
      local p = tune.random(ctx.space, ctx.rng)
      local k = p and tune.key(p)
      if k and not ctx.seen[k] and not taken[k] then taken[k] = true pts[#pts + 1] = p end
    end
    ctx.init_points, ctx.init_next = pts, 1
  end
  return ctx.init_points
end

-- Whether points of the init design are still to be handed out.
local function in_init(ctx)
  return ctx.init_points ~= nil and ctx.init_next <= #ctx.init_points
end

local function propose_model(ctx, n, guess)
  local d = #ctx.space.names
  -- random points first: twice the parameters, at least 6, at most a quarter of the budget
  local init = ctx.opts.init > 0 and ctx.opts.init or math.max(6, math.min(2 * d, math.floor(ctx.opts.budget / 4)))
  local choosing = ctx.choosing -- (a choice deferred while a batch runs: choose_deferred)
  local known = learnt(ctx)
  local X, y = observations(ctx, known)
  local out = {}
  -- (the batch proposed one step ahead counts as drawn)
  local drawn = #y + (choosing and #choosing.in_flight or 0)
  if (not ctx.init_points and drawn < init) or in_init(ctx) or (guess and drawn < init) then
    local pts = init_design(ctx, init - drawn)
    -- (a guess takes as many random points as results are missing to the design, those
    -- past its end drawn after it: the points a batch-by-batch drawing guessed)
    local k = guess and math.min(n, init - drawn) or n
    local first = ctx.init_next
    ctx.init_next = math.min(#pts, first + k - 1) + 1
    for i = first, ctx.init_next - 1 do
      if fresh(ctx, pts[i]) then out[#out + 1] = tune.candidate(ctx.task, pts[i]) end
    end
    for _ = 1, guess and 200 * k or 0 do
      if #out >= k then break end
      local p = tune.random(ctx.space, ctx.rng)
      if fresh(ctx, p) then out[#out + 1] = tune.candidate(ctx.task, p) end
    end
    return out
  end
  -- the pool: every valid point not yet proposed where there are few enough; else a
  -- random sample of them plus every unseen neighbour of the best points so far
  -- (pool_keys[i]: pool[i]'s key, made once: the picks below ask for it at every point)
  local pool, in_pool, pool_keys = {}, {}, {}
  local function add(p)
    local k = p and tune.key(p)
    if p and not ctx.seen[k] and not in_pool[k] then
      in_pool[k] = true
      pool[#pool + 1] = p
      pool_keys[#pool] = k
    end
  end
  if ctx.valid and #ctx.valid <= POOL then
    for _, p in ipairs(ctx.valid) do add(p) end
  else
    for _ = 1, POOL do add(ctx.valid and ctx.rng:pick(ctx.valid) or tune.random(ctx.space, ctx.rng)) end
    local ranked = {}
    for _, c in ipairs(known) do
      if c.t then ranked[#ranked + 1] = c end
    end
    table.sort(ranked, function(a, b) return a.t < b.t end)
    for r = 1, math.min(8, #ranked) do
      for _, q in ipairs(tune.neighbours(ctx.space, ranked[r].defines)) do add(q) end
    end
  end
  if #pool == 0 then return out end
  local xs = {}
  for i, p in ipairs(pool) do xs[i] = ctx.encode(p) end
  -- (a guess for compiling ahead: one fit serves every pick, the top n by the model).
  -- The real picks favour the points of the last guess (compiled ahead, so they run
  -- without waiting for a compiler) where the model rates one nearly as high as its
  -- first choice: the guess is part of the search's state, computed by every propose
  -- at a fixed size, so the same seed gives the same run on any machine
  local favoured = not guess and ctx.guess_keys or nil
  local pending
  if choosing then
    pending = {}
    for k, c in ipairs(choosing.in_flight) do pending[k] = ctx.encode(c.defines) end
  end
  local chosen, ei = surrogate.pick(X, y, xs, n, ctx.rng, { offset = ctx.picks or 0, refit_below = guess and 0 or nil,
    favour = favoured and function(i) return favoured[pool_keys[i]] == true end, pending = pending })
  ctx.picks = (ctx.picks or 0) + #chosen
  -- a model that expects nothing better anywhere, twice in a row, ends the search
  ctx.flat = ei < ctx.opts.stop_ei and (ctx.flat or 0) + 1 or 0
  if ctx.flat >= 2 then
    ctx.stopped = string.format("the model expects no improvement (best expected gain %.2g%%)", 100 * (math.exp(ei) - 1))
    if not ctx.opts.quiet then print("tune: " .. ctx.stopped) end
    return {}
  end
  local parent = ctx.best
  if choosing then parent = choosing.best or nil end
  for _, i in ipairs(chosen) do
    if fresh(ctx, pool[i]) then out[#out + 1] = tune.candidate(ctx.task, pool[i], parent) end
  end
  return out
end

-- The model's next points on what it knows now (one fit), with no side effects on the
-- run's generator, seen set or counters: the guess compiled ahead and favoured by the
-- next real picks.
-- fn(copy, ...) on a copy of the search's context: reads fall through to ctx, what fn
-- sets (its counters and stop: picks, flat, stopped) stays on the copy, with a generator
-- and seen set of its own and quiet options: what a proposal would be, with no side
-- effects. ctx itself never changes, so a sliced think may yield to the driver inside fn
-- (kloop.search.slice). Returns fn's result.
local function on_copies(ctx, fn, ...)
  local copy = setmetatable({
    rng = ctx.rng:clone(),
    seen = setmetatable({}, { __index = ctx.seen }), -- fresh() marks the copy only
    opts = setmetatable({ quiet = true }, { __index = ctx.opts }),
  }, { __index = ctx })
  return fn(copy, ...)
end

local GUESS = 16
local function model_guess(ctx, n) return on_copies(ctx, propose_model, n, true) end

local function keep_guess(ctx, list)
  ctx.guess = list
  ctx.guess_keys = {}
  for _, c in ipairs(list) do ctx.guess_keys[tune.key(c.defines)] = true end
end

-- The batch after the one in flight (ctx.deferred, left by propose), chosen on the
-- history as it was when the one in flight was proposed, that batch pending at its
-- predicted times; and the guess after it. The same choice whether S.think makes it
-- while the batch runs or the next propose does. Returns the batch.
local function choose_deferred(ctx)
  local d = ctx.deferred
  ctx.deferred, ctx.choosing = nil, d
  local ok, err = pcall(function()
    ctx.next_batch = propose_model(ctx, d.n)
    keep_guess(ctx, #ctx.next_batch > 0 and not ctx.stopped and model_guess(ctx, GUESS) or {})
  end)
  ctx.choosing = nil
  if not ok then error(err, 0) end
  return ctx.next_batch
end

-- Candidates per batch once choosing ahead: --ahead-batch, or (0) three times --batch
-- in a search of 64 or more, where more GPU time per batch hides more of the next
-- batch's compiles (an empty compile cache on the H200: 39% GPU busy in batches of 4,
-- 46-58% in batches of 8, 67-71% in batches of 12, 65% in batches of 16) and costs
-- nothing measured up to 12 (search_sim, gemm_tiled at 89: 100% within 2% with 8 or 12,
-- 93-95% with 16; 10^3 at 85: 100%; at 45 batches of 8 would be 83% against 88%, so a
-- small search keeps --batch).
-- room: the budget's room once the batch in flight is evaluated. A last batch of at most
-- a batch would run nearly alone at the end of the search, its heavy compiles hidden
-- behind the one batch before it (the budget leaves no room for spares): the batch before
-- takes it in, so the search's last choice is made a batch earlier and its stragglers
-- compile behind two batches. (search_sim, 20 seeds, against taking in at most half a
-- batch: gemm_tiled at 64, 80, 100 and 10^3, 10^4 at 64-200 the same share within 2%,
-- mean distances within 0.0006; taking in up to 1.5 batches lost 5-10 points at 64-80.
-- A gemm_tiled model 100 waited up to 1.7 s at its end for a 3.7 s compile.)
local function ahead_batch(ctx, n, room)
  local b = tonumber(ctx.opts.ahead_batch) or 0
  if b > 0 then return math.floor(b) end
  b = ctx.opts.budget >= 64 and 3 * n or n
  if room and room > b and room - b <= b then b = room end
  return b
end

-- The budget's room once nbatch more are evaluated: the driver's (it counts candidates
-- carried from a spilled batch), or from the history where a context has none (benches).
local function room_after(ctx, nbatch)
  if ctx.room_after then return ctx:room_after(nbatch) end
  return ctx.opts.budget - (#ctx.history - 1) - #(ctx.carried or {}) - nbatch
end

local function propose_model_step(ctx, n)
  -- (what the budget has taken: the evaluated and the candidates carried past a spilled
  -- batch, kloop.search.driver Ctx:spill_ok, whose results are as far off as the batch in
  -- flight's; counting only the evaluated, a spill just before the step that begins
  -- choosing ahead put the model's first choice, and its compiles, a batch later, the
  -- GPU waiting for them: round14a, seeds 13 and 3)
  local evaluated = ctx.opts.budget - room_after(ctx, 0)
  if ctx.opts.ahead == "on" and (ctx.next_batch or ctx.deferred or evaluated >= (ctx.ahead_after or AHEAD_AFTER)) then
    -- one batch ahead: this step's batch was chosen while the one before ran (S.think),
    -- or is chosen now on the same data; the next is left to choose while this one
    -- runs, without its results, so the driver compiles exactly what comes next. (The
    -- first such step chooses its own batch as before.)
    if ctx.deferred then choose_deferred(ctx) end
    local out = ctx.next_batch or propose_model(ctx, n)
    ctx.next_batch = nil
    if #out > 0 and not ctx.stopped then
      -- (what the choice reads: the history's length, the best, what was learnt, then)
      -- (the choice sees the carried ones as it sees the batch: pending, at predicted
      -- times; copied, as the driver's list shrinks while they run)
      local in_flight = {}
      for i, c in ipairs(out) do in_flight[i] = c end
      for _, c in ipairs(ctx.carried or {}) do in_flight[#in_flight + 1] = c end
      ctx.deferred = { horizon = #ctx.history, best = ctx.best or false, learnt = learnt(ctx), in_flight = in_flight,
        n = ahead_batch(ctx, n, room_after(ctx, #out)) }
    end
    return out
  end
  local out = propose_model(ctx, n)
  -- the guess for the step after, kept whether or not the driver compiles it ahead
  keep_guess(ctx, #out > 0 and not ctx.stopped and model_guess(ctx, GUESS) or {})
  return out
end

-- Whether think's exact list offers the spill: where filling is on, the run already
-- depends on the compilers' timing, so a candidate still compiling when the next batch
-- has run may be carried past it (kloop.search.driver Ctx:spill_ok).
local function spill_wanted(ctx) return (ctx.fill or 0) > 0 or nil end

-- The batch the next propose returns whatever the results of this one, named to the
-- driver exactly (so it may run one of them whose binary is ready while this batch's
-- last ones still compile), or nil: the queue's next points (exhaustive, or a space
-- within the budget), the random method's next draws, and behind the model the next
-- points of its init design; never a choice the results could move (anneal's walk, the
-- model's picks). No side effects.
local function exact_next(ctx)
  local n, out = ctx.opts.batch, nil
  if ctx.queue then
    out = {}
    for i = #ctx.queue, 1, -1 do
      if #out >= n then break end
      local p = ctx.queue[i]
      if not ctx.seen[tune.key(p)] then out[#out + 1] = tune.candidate(ctx.task, p) end
    end
  elseif ctx.opts.method == "random" then
    out = on_copies(ctx, S.propose)
  elseif ctx.opts.method == "model" and not ctx.next_batch and in_init(ctx) then
    out = on_copies(ctx, propose_model, n)
  end
  if not out or #out == 0 then return nil end
  out.exact = true
  out.spill = spill_wanted(ctx)
  return out
end

-- Work for while the GPU evaluates the batch just proposed (kloop.search.driver calls it
-- once per batch, during the batch's first worker request): behind the model, one batch
-- ahead, the choice of the next batch, which it returns for compiling now; nothing once a
-- result of the batch has come in (the next propose then makes the same choice). Where
-- no such choice is deferred, the next batch no result moves (exact_next), or nothing.
function S.think(ctx)
  if not ctx.deferred then return exact_next(ctx) end
  if #ctx.history ~= ctx.deferred.horizon then return nil end
  local batch = choose_deferred(ctx)
  -- (the next propose returns this very batch: the driver may run a candidate of it
  -- whose binary is ready while this batch's last ones still compile; and, where filling
  -- is on, carry those last ones past it once it has run: exact_next)
  batch.exact = true
  batch.spill = spill_wanted(ctx)
  -- and, where the batch would still wait, up to --fill of the guess past it (the points
  -- the model rates next, best first; the driver takes those whose binaries are ready
  -- first): evaluated then, they are the search's own, learnt from at the next choice
  -- (S.on_result marks them seen)
  local fill = ctx.fill or 0
  if fill > 0 and #batch > 0 then
    local spare = { max = fill }
    for _, c in ipairs(ctx.guess or {}) do
      if not ctx.seen[tune.key(c.defines)] then spare[#spare + 1] = c end
    end
    batch.spare = spare
  end
  return batch
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
  if ctx.opts.method == "model" then return propose_model_step(ctx, n) end
  local evaluated = #ctx.history - 1
  for _ = 1, 200 * n do
    if #out >= n then break end
    local p
    if ctx.opts.method == "random" or evaluated < ctx.opts.explore * ctx.opts.budget or not ctx.current then
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

-- What propose would give next, with no side effects (kloop.search.driver compiles it
-- ahead while the batch just proposed is evaluated): the queue's next points; the random
-- draws propose will make (on a copy of the run's generator and of the seen set); behind
-- the model, the guess the last propose made: its top GUESS points on one fit, which the
-- next real picks favour (the batch's results still move them; a miss costs a compile's
-- latency, and idle CPU for the guessed points never proposed).
function S.upcoming(ctx, n)
  local out = {}
  if ctx.queue then
    for i = #ctx.queue, 1, -1 do
      if #out >= n then break end
      local p = ctx.queue[i]
      if not ctx.seen[tune.key(p)] then out[#out + 1] = tune.candidate(ctx.task, p) end
    end
    return out
  end
  if ctx.opts.method == "model" then
    -- the batch chosen one step ahead (exactly what comes next), then the guess the
    -- last propose made (before any, the first random draws, exactly)
    for _, c in ipairs(ctx.next_batch or {}) do
      if #out < n then out[#out + 1] = c end
    end
    local list = ctx.guess or model_guess(ctx, GUESS)
    for _, c in ipairs(list) do
      if #out >= n then break end
      if not ctx.seen[tune.key(c.defines)] then out[#out + 1] = c end
    end
    return out
  end
  -- random draws as propose makes them
  return on_copies(ctx, function(copy)
    for _ = 1, math.ceil(n / math.max(1, ctx.opts.batch)) do
      local got = S.propose(copy)
      if #got == 0 then break end
      for _, c in ipairs(got) do if #out < n then out[#out + 1] = c end end
      if #out >= n then break end
    end
    return out
  end)
end

-- Annealing: move to a worse point with probability exp(-(t - t_cur)/(T * t_cur)).
function S.on_result(ctx, cand, r)
  -- (a point the driver ran to fill a wait, from think's spare list, is seen from now)
  if cand.defines and cand.proposer == "tune" then ctx.seen[tune.key(cand.defines)] = true end
  if r.verdict ~= "ok" then return end
  local cur = ctx.current
  if not cur then ctx.current = cand return end
  -- draw every time, so the random stream does not depend on the measured times
  local u = (ctx.walk_rng or ctx.rng):float()
  local dt = (time_of(r) - time_of(cur.result)) / time_of(cur.result)
  if dt < 0 or u < math.exp(-dt / ctx.temperature) then ctx.current = cand end
  ctx.temperature = ctx.temperature * 0.95
end

return S
