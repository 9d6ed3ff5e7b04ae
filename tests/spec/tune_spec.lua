-- tests/spec/tune_spec.lua: tune's learning search (strategies/tune.lua, kloop.surrogate)
-- on synthetic spaces, driven the way the driver drives a strategy; no GPU.
local surrogate = require("kloop.search.surrogate")
local tune = require("kloop.search.tune")
local rng = require("kloop.search.rng")

-- A task-like space: two or three parameters, a constraint, and a cost function.
local function space_task(levels, dims, constraint)
  local params = {}
  for d = 1, dims do
    params["P" .. d] = {}
    for v = 1, levels do params["P" .. d][v] = 2 ^ (v - 1) end
  end
  return { name = "synthetic", source = "", params = params, constraint = constraint }
end

local function bowl(p)
  local t = 1
  for k, v in pairs(p) do
    local c = ({ P1 = 16, P2 = 4, P3 = 64 })[k]
    t = t + (math.log(v / c) / math.log(2)) ^ 2
  end
  return t
end

-- init, then propose / evaluate / on_result until the budget or the strategy stops
local function drive(task, opts, time_of)
  local S = dofile("strategies/tune.lua")
  local o = { budget = 20, batch = 4, method = "model", init = 0, stop_ei = 0.0005, explore = 0.3, quiet = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  -- (o.ahead is how many upcoming names, as the driver asks; the strategy's own option
  -- of that name, choosing a batch ahead, is ahead_mode here: on, tune's default)
  o.upcoming_n, o.ahead = o.ahead, o.ahead_mode or "on"
  local ctx = { task = task, opts = o, rng = rng.new(o.seed or 1),
    history = { { proposer = "baseline", result = { verdict = "ok", time_ms = 1e9 } } } }
  S.init(ctx)
  local evaluated, best, seen = 0, math.huge, {}
  ctx.guesses, ctx.thoughts = {}, {}
  ctx.batch_sizes = {}
  while evaluated < o.budget do
    local cands = S.propose(ctx)
    if #cands > 0 then ctx.batch_sizes[#ctx.batch_sizes + 1] = math.min(#cands, o.budget - evaluated) end
    -- think's list says exact: this propose returns it, as it is (the driver runs its
    -- ready candidates ahead on that promise)
    if ctx.exact_before then
      local a, b = {}, {}
      for i, c in ipairs(ctx.exact_before) do a[i] = tune.key(c.defines) end
      for i, c in ipairs(cands) do b[i] = tune.key(c.defines) end
      assert.are.same(a, b)
      ctx.exact_before, ctx.exact_checked = nil, (ctx.exact_checked or 0) + 1
    end
    if #cands == 0 then break end
    -- the driver's compile ahead (kloop.search.driver Ctx:compile_ahead), when asked for
    if o.upcoming_n then
      ctx.guesses[#ctx.guesses + 1] = { after = #ctx.history - 1 + #cands, list = S.upcoming(ctx, o.upcoming_n) }
    end
    -- the driver's think call, during the batch's first request (o.think: "late", after
    -- the batch's first result, which it must ignore; "never")
    if (o.think or "early") == "early" then
      local got
      if o.sliced then
        -- (as the driver slices it, here a yield at every point: kloop.search.slice)
        local job = require("kloop.search.slice").job(function() got = S.think(ctx) end)
        while not job:step(0) do o.sliced(ctx) end
      else
        got = S.think(ctx)
      end
      if got then ctx.thoughts[#ctx.thoughts + 1] = { after = #ctx.history - 1 + #cands, list = got } end
      if got and got.exact then ctx.exact_before = got end
    end
    for ci, c in ipairs(cands) do
      if evaluated >= o.budget then break end
      evaluated = evaluated + 1
      local k = tune.key(c.defines)
      assert.is_nil(seen[k], "a point proposed twice: " .. k)
      seen[k] = true
      local t = time_of(c.defines)
      c.result = t and { verdict = "ok", time_ms = t } or { verdict = "launch_error" }
      ctx.history[#ctx.history + 1] = c
      if t and t < best then best = t ctx.best = c end
      S.on_result(ctx, c, c.result)
      if ci == 1 and o.think == "late" then
        -- (no choice may use a result of its own batch: late, think names only a batch no
        -- result moves, which the next propose must then return as it is)
        local got = S.think(ctx)
        assert.is_true(got == nil or (got.exact == true and ctx.deferred == nil), "think used a result of its own batch")
        if got then ctx.exact_before = got end
      end
      -- (o.rewrite: an earlier result rewritten in place after the batch's first result,
      -- as a sentinel trip does: a choice deferred from before it must not see it)
      if ci == 1 and o.rewrite and #ctx.history > 12 then
        local old = ctx.history[#ctx.history - 10]
        if old.result.time_ms then old.result.time_ms = old.result.time_ms * 0.5 end
      end
    end
  end
  return best, evaluated, ctx
end

describe("kloop.search.surrogate", function()
  it("learns a bowl well enough to rank points", function()
    local task = space_task(8, 2)
    local space = tune.space(task)
    local enc = surrogate.encoder(space)
    local r = rng.new(3)
    local X, y = {}, {}
    for _, p in ipairs(r:shuffle(tune.all(space))) do
      if #X < 30 then X[#X + 1], y[#y + 1] = enc(p), math.log(bowl(p)) end
    end
    local f = surrogate.fit(X, y, r)
    local near = f:predict(enc({ P1 = 16, P2 = 4 }))
    local far = f:predict(enc({ P1 = 1, P2 = 128 }))
    assert.is_true(near < far, string.format("%.3f vs %.3f", near, far))
    local _, sd = f:predict(enc({ P1 = 16, P2 = 4 }))
    assert.is_true(sd >= 0)
  end)

  it("scores expected improvement: higher for a better mean, and for more doubt at equal mean", function()
    local ei = surrogate.expected_improvement
    assert.is_true(ei(0.5, 0.1, 1.0) > ei(0.9, 0.1, 1.0))
    assert.is_true(ei(1.0, 0.5, 1.0) > ei(1.0, 0.1, 1.0))
    assert.are.equal(0, ei(2.0, 0, 1.0))
  end)
end)

describe("tune --method model", function()
  it("finds the optimum of a 512-point space in 48 evaluations, for every seed tried", function()
    local task = space_task(8, 3)
    for seed = 1, 5 do
      local best = drive(task, { budget = 48, seed = seed }, bowl)
      assert.are.equal(1, best, "seed " .. seed)
    end
  end)

  it("beats random sampling at the same budget on the same seeds", function()
    local task = space_task(8, 3)
    local m, r = 0, 0
    for seed = 1, 8 do
      m = m + drive(task, { budget = 24, seed = seed }, bowl)
      r = r + drive(task, { budget = 24, seed = seed, method = "random" }, bowl)
    end
    assert.is_true(m < r, string.format("model %.2f vs random %.2f", m / 8, r / 8))
  end)

  it("learns where the space fails (failed points are data, not holes)", function()
    local task = space_task(8, 2)
    local best = drive(task, { budget = 30, seed = 2 }, function(p)
      if p.P1 >= 32 then return nil end -- a launch error over half the space
      return bowl(p)
    end)
    assert.are.equal(1, best)
  end)

  it("stops early when the model expects nothing better (a flat space)", function()
    local task = space_task(8, 3)
    local _, n, ctx = drive(task, { budget = 200, seed = 4 }, function() return 1 end)
    assert.is_true(n < 100, "evaluated " .. n)
    assert.matches("expects no improvement", ctx.stopped)
  end)

  it("repeats itself for the same seed", function()
    local task = space_task(8, 3)
    local _, _, a = drive(task, { budget = 20, seed = 9 }, bowl)
    local _, _, b = drive(task, { budget = 20, seed = 9 }, bowl)
    for i = 2, #a.history do assert.are.equal(tune.key(a.history[i].defines), tune.key(b.history[i].defines)) end
  end)

  it("goes exhaustive when the budget covers the valid points, not the raw space", function()
    local task = space_task(8, 2, function(p) return p.P1 * p.P2 <= 64 end)
    local valid = #tune.all(tune.space(task))
    assert.is_true(valid < 64)
    local _, n = drive(task, { budget = valid, seed = 1 }, bowl)
    assert.are.equal(valid, n)
  end)

  -- of each batch's proposals, how many the guess before it named (compiled ahead):
  -- guesses {after = evaluated so far, list}, default ctx.guesses; only the first
  -- `first` of each list, and only guesses made once `from` were evaluated, when given
  local function guessed_share(ctx, m, guesses, first, from)
    local hits, total = 0, 0
    for _, g in ipairs(guesses or ctx.guesses) do
      if g.after >= (from or 0) then
        local guessed = {}
        for k, c in ipairs(g.list) do
          local key = tune.key(c.defines)
          if k <= (first or #g.list) then guessed[key] = true end
          -- never a point already proposed
          for i = 2, math.min(g.after + 1, #ctx.history) do
            assert.are_not.equal(tune.key(ctx.history[i].defines), key, m .. ": guessed an evaluated point")
          end
        end
        for j = 1, 4 do
          local nxt = ctx.history[g.after + 1 + j]
          if nxt then
            total = total + 1
            if guessed[tune.key(nxt.defines)] then hits = hits + 1 end
          end
        end
      end
    end
    return hits, total
  end

  -- upcoming (compiled ahead by the driver) must not change the search, and where the
  -- next proposals are known (the queue, random draws) it must be exactly them
  it("guesses what it proposes next without changing the search", function()
    local task = space_task(8, 3)
    for _, m in ipairs({ "model", "random", "anneal", "exhaustive" }) do
      local o = { budget = m == "exhaustive" and 512 or 40, seed = 5, method = m }
      local _, _, plain = drive(task, o, bowl)
      o.ahead = 16
      local _, _, ahead = drive(task, o, bowl)
      assert.are.equal(#plain.history, #ahead.history, m)
      for i = 2, #plain.history do
        assert.are.equal(tune.key(plain.history[i].defines), tune.key(ahead.history[i].defines), m .. " candidate " .. i)
      end
      local hits, total = guessed_share(ahead, m)
      assert.is_true(total > 0, m)
      if os.getenv("KLOOP_SPEC_VERBOSE") then print(string.format("\n%s: %d of %d next proposals guessed", m, hits, total)) end
      if m == "model" then assert.is_true(hits >= total / 4, string.format("model: %d of %d guessed", hits, total)) end
      if m == "random" or m == "exhaustive" then
        assert.are.equal(total, hits, m .. ": the next proposals are known")
      end
    end
  end)

  -- the model's real picks prefer its last guess where the model rates a guessed point
  -- nearly as high: more of them are compiled ahead than with no preference, and the
  -- search still finds the bowl's bottom
  it("favours the points it guessed (compiled ahead)", function()
    local task = space_task(8, 3)
    local o = { budget = 40, seed = 5, method = "model", ahead = 16 }
    local saved = { surrogate.FAVOUR_EI, surrogate.FAVOUR_MEAN }
    surrogate.FAVOUR_EI, surrogate.FAVOUR_MEAN = math.huge, -math.huge
    local ok, err = pcall(function()
      local _, _, plain = drive(task, o, bowl)
      o.plain_hits = guessed_share(plain, "no preference")
    end)
    surrogate.FAVOUR_EI, surrogate.FAVOUR_MEAN = saved[1], saved[2]
    assert(ok, err)
    local best, _, fav = drive(task, o, bowl)
    local hits, total = guessed_share(fav, "favoured")
    if os.getenv("KLOOP_SPEC_VERBOSE") then
      print(string.format("\nguessed: %d of %d favoured, %d with no preference", hits, total, o.plain_hits))
    end
    assert.is_true(hits > o.plain_hits, string.format("favoured %d, no preference %d", hits, o.plain_hits))
    assert.are.equal(1, best) -- P1=16 P2=4 P3=64
  end)

  -- past 16 evaluations the model chooses each batch one step ahead, while the one
  -- before runs (think): what think returns is exactly the next batch (compiled then);
  -- the same search whether think runs during the batch, too late, or never
  it("chooses one batch ahead once past 16 evaluations, in think, the same search whenever it runs", function()
    local task = space_task(8, 3)
    for _, rewrite in ipairs({ false, true }) do
      local keys = {}
      for _, when in ipairs({ "early", "late", "never" }) do
        -- (batches of 8 once ahead, as many checks as before the default became 12)
        local _, _, ctx = drive(task, { budget = 64, seed = 3, method = "model", think = when, rewrite = rewrite,
          ahead_batch = 8 }, bowl)
        local list = {}
        for i = 2, #ctx.history do list[#list + 1] = tune.key(ctx.history[i].defines) end
        keys[when] = table.concat(list, ";")
        assert.are.equal(when == "early", #ctx.thoughts > 0, when)
        if when == "early" then assert.is_true((ctx.exact_checked or 0) > 5, "think's lists were not exact") end
      end
      assert.are.equal(keys.early, keys.late, "rewrite " .. tostring(rewrite))
      assert.are.equal(keys.early, keys.never, "rewrite " .. tostring(rewrite))
    end
    local share = {}
    for _, ahead in ipairs({ "on", "off" }) do
      local _, _, ctx = drive(task, { budget = 64, seed = 3, method = "model", ahead = 16, ahead_mode = ahead }, bowl)
      local known = {}
      for _, g in ipairs(ctx.guesses) do known[g.after] = g.list end
      -- what the driver compiles for the next batch: think's choice, or upcoming's first
      for _, t in ipairs(ctx.thoughts) do known[t.after] = t.list end
      local list = {}
      for after, l in pairs(known) do list[#list + 1] = { after = after, list = l } end
      local hits, total = guessed_share(ctx, ahead, list, 4, 20)
      assert.is_true(total >= 12, ahead .. ": " .. total)
      share[ahead] = hits / total
    end
    assert.are.equal(1, share.on)
    assert.is_true(share.off < 1, "with --ahead off the next batch was known exactly too")
  end)

  -- the driver may run a candidate of the next batch while this one's last compile, where
  -- think names that batch exactly: the model's random start, the random method's draws,
  -- the queue of an exhaustive search; never the walk of anneal, whose next step the
  -- results move (fails before think named any of them: no batch named)
  it("names the next batch exactly where no result moves it", function()
    local task = space_task(8, 3)
    local named = {}
    for _, method in ipairs({ "model", "random", "exhaustive", "anneal" }) do
      local budget = method == "exhaustive" and 512 or 40
      local _, n, ctx = drive(task, { budget = budget, seed = 5, method = method }, bowl)
      assert.are.equal(budget, n, method)
      named[method] = ctx.exact_checked or 0
    end
    -- (the model: 6 random points first, in batches of 4 and 2, so its second batch is
    -- named in its first; then each batch chosen ahead, past 16 evaluations)
    assert.is_true(named.model >= 2, "model: " .. named.model)
    assert.are.equal(40 / 4 - 1, named.random)
    assert.are.equal(512 / 4 - 1, named.exhaustive)
    assert.are.equal(0, named.anneal)
    -- the model's second batch is the one named in its first: the rest of its random start
    local _, _, ctx = drive(task, { budget = 40, seed = 5, method = "model" }, bowl)
    local first = ctx.thoughts[1]
    assert.are.equal(4, first.after)
    assert.is_true(first.list.exact)
    for i, c in ipairs(first.list) do assert.are.same(ctx.history[5 + i].defines, c.defines) end
  end)

  -- the search's last batch alone would be at most a batch of 12: its heavy compiles would
  -- hide behind one batch only, so the batch before takes it in and the last choice is
  -- made a batch earlier
  -- (fails with at most half a batch taken in: 95 = 4 2 4 4 + 6 x 12 + a last batch of 9)
  it("merges a last batch of at most a batch into the one before", function()
    for _, budget in ipairs({ 100, 89, 95, 70 }) do
      local _, n, ctx = drive(space_task(8, 3), { budget = budget, seed = 2, method = "model", stop_ei = 0 }, bowl)
      assert.are.equal(budget, n)
      local sizes, sum = ctx.batch_sizes, 0
      for _, k in ipairs(sizes) do sum = sum + k end
      assert.are.equal(budget, sum)
      assert.is_true(sizes[#sizes] > 12, budget .. ": " .. table.concat(sizes, " "))
      assert.is_true(sizes[#sizes] <= 24, budget .. ": " .. table.concat(sizes, " "))
    end
  end)

  -- a candidate the driver carried past a spilled batch (still compiling) is proposed, not
  -- evaluated: it counts towards --ahead-after, so the step that would begin choosing
  -- ahead still does, and the model's first batch is chosen in think while the last
  -- points of its random start run, the carried one pending with them (before: think
  -- named nothing there, and the model chose only after the carried one had run)
  it("begins choosing ahead on time where a candidate was carried past a spilled batch", function()
    local S = dofile("strategies/tune.lua")
    local task = space_task(8, 3)
    local o = { budget = 100, batch = 4, method = "model", init = 10, stop_ei = 0.0005, explore = 0.3, quiet = true,
      ahead = "on" }
    for _, carry in ipairs({ false, true }) do
      local ctx = { task = task, opts = o, rng = rng.new(4),
        history = { { proposer = "baseline", result = { verdict = "ok", time_ms = 1e9 } } } }
      S.init(ctx)
      local function run(c)
        c.result = { verdict = "ok", time_ms = bowl(c.defines) }
        ctx.history[#ctx.history + 1] = c
        S.on_result(ctx, c, c.result)
      end
      for _, c in ipairs(S.propose(ctx)) do run(c) end
      local second = S.propose(ctx)
      assert.are.equal(4, #second)
      for i, c in ipairs(second) do
        if carry and i == 4 then ctx.carried = { c } else run(c) end
      end
      local third = S.propose(ctx)
      assert.are.equal(2, #third, "the random start's last two points")
      assert.is_truthy(ctx.deferred, "carry " .. tostring(carry) .. ": no choice deferred to think")
      assert.are.equal(carry and 3 or 2, #ctx.deferred.in_flight)
      local got = S.think(ctx)
      assert.is_truthy(got, "carry " .. tostring(carry) .. ": think named nothing")
      assert.is_true(got.exact == true and #got > 0)
      local taken = {}
      for _, c in ipairs(third) do taken[tune.key(c.defines)] = true end
      if carry then taken[tune.key(second[4].defines)] = true end
      for _, c in ipairs(got) do assert.is_nil(taken[tune.key(c.defines)], "a point in flight chosen again") end
    end
  end)

  it("refuses an unknown method", function()
    local ok, err = pcall(drive, space_task(4, 2), { method = "genetic" }, bowl)
    assert.is_false(ok)
    assert.matches("model, anneal, random or exhaustive", err)
  end)

  -- sliced, think yields to the driver inside its guess too (it works on a copy of the
  -- context), and the driver never sees a swapped generator, seen set or options
  it("yields inside its guess when sliced, with the context unchanged at every yield", function()
    local real_pick = surrogate.pick
    local in_guess, yields, guess_yields = false, 0, 0
    local keep
    local ok, err = pcall(function()
      surrogate.pick = function(X, y, xs, k, r, opts)
        local was = in_guess
        in_guess = keep ~= nil and r ~= keep.rng
        local res = { real_pick(X, y, xs, k, r, opts) }
        in_guess = was
        return unpack(res, 1, table.maxn(res))
      end
      local _, _, ctx = drive(space_task(6, 3), { budget = 40, seed = 4, sliced = function(ctx)
        keep = keep or { rng = ctx.rng, seen = ctx.seen, quiet = ctx.opts.quiet }
        yields = yields + 1
        if in_guess then guess_yields = guess_yields + 1 end
        assert.are.equal(keep.rng, ctx.rng, "the driver saw the guess's generator")
        assert.are.equal(keep.seen, ctx.seen, "the driver saw the guess's seen set")
        assert.are.equal(keep.quiet, ctx.opts.quiet, "the driver saw the guess's options")
      end }, bowl)
      assert.is_true(#ctx.thoughts > 0, "no think chose a batch")
    end)
    surrogate.pick = real_pick
    assert(ok, err)
    assert.is_true(yields > 0, "no yield in a sliced think")
    assert.is_true(guess_yields > 0, string.format("none of %d yields came inside the guess", yields))
  end)
end)
