-- kloop.search.surrogate: the model behind tune's learning search: a random forest over the
-- parameters of a space (predicting log time, the spread of its trees as uncertainty)
-- and expected improvement over the points not yet evaluated. Pure Lua, seeded by the
-- run's rng, so a run with the same seed proposes the same points.
local slice = require("kloop.search.slice")

local M = {}

-- Features of a point: per parameter the log2 of a positive number, the number itself
-- otherwise, or a value's index for non-numbers (ordered as the task lists them).
function M.encoder(space, pairs_too)
  local enc = {}
  for i, n in ipairs(space.names) do
    local vals = space.values[n]
    local numeric, positive = true, true
    for _, v in ipairs(vals) do
      if type(v) ~= "number" then numeric = false end
      if type(v) ~= "number" or v <= 0 then positive = false end
    end
    local index = {}
    for k, v in ipairs(vals) do index[v] = k end
    enc[i] = function(v)
      if positive then return math.log(v) / math.log(2) end
      if numeric then return v end
      return index[v] or 0
    end
  end
  -- pairwise sums and differences too: in log space they are products and ratios
  -- (threads per block = BM * BN / (TM * TN), tiles per row ...), which axis-aligned
  -- tree splits cannot express from single parameters
  local d = #space.names
  return function(p)
    local x = {}
    for i, n in ipairs(space.names) do x[i] = enc[i](p[n]) end
    if pairs_too ~= false and d <= 12 then
      for i = 1, d do
        for j = i + 1, d do
          x[#x + 1] = x[i] + x[j]
          x[#x + 1] = x[i] - x[j]
        end
      end
    end
    return x
  end
end

-- One regression tree on rows idx of X/y: split by the feature and threshold that most
-- reduce the squared error, down to min_leaf rows or max_depth. L (M.fit's levels):
-- per feature its distinct values in order (L.values[f]), each row's index among them
-- (L.rank[r][f]), and scratch sums per level (cleared after use). The tree goes into the
-- forest's flat arrays out (F, T, L, R, V: a node's feature, 0 at a leaf, its threshold, its
-- children's indices and a leaf's value), so predictions walk integer indices, not nested
-- tables (the same splits, drawn in the same order: the same predictions, in about a
-- sixth less of a model search's CPU time). Returns the node's index.
local function leaf(f, v)
  local i = #f.F + 1
  f.F[i], f.T[i], f.L[i], f.R[i], f.V[i] = 0, 0, 0, 0, v
  return i
end

local function build(X, y, idx, depth, opts, rng, L, out)
  local n = #idx
  local sum, sq = 0, 0
  for _, r in ipairs(idx) do sum = sum + y[r] sq = sq + y[r] * y[r] end
  local mean = sum / n
  if n < 2 * opts.min_leaf or depth >= opts.max_depth or sq - sum * sum / n < 1e-12 then
    return leaf(out, mean)
  end
  local d = #X[idx[1]]
  -- a random subset of features at each split (mtry), the forest's decorrelation
  local feats = {}
  for f = 1, d do feats[f] = f end
  rng:shuffle(feats)
  local mtry = math.max(1, math.ceil(d * opts.feature_fraction))
  local best_gain, best_f, best_t = 0, nil, nil
  local cnt, sy, syy = L.cnt, L.sy, L.syy
  for k = 1, mtry do
    local f = feats[k]
    -- the rows' sums per value of f (a parameter has few values), then the splits
    -- between the values present, in order: no sort of the rows
    local vals, rank = L.values[f], L.rank
    for _, r in ipairs(idx) do
      local j, t = rank[r][f], y[r]
      cnt[j], sy[j], syy[j] = cnt[j] + 1, sy[j] + t, syy[j] + t * t
    end
    local i, ls, lsq, prev = 0, 0, 0, nil
    for j = 1, #vals do
      if cnt[j] > 0 then
        if prev and i >= opts.min_leaf and n - i >= opts.min_leaf then
          local rs, rsq = sum - ls, sq - lsq
          local sse = (lsq - ls * ls / i) + (rsq - rs * rs / (n - i))
          local gain = (sq - sum * sum / n) - sse
          if gain > best_gain then best_gain, best_f, best_t = gain, f, (vals[prev] + vals[j]) / 2 end
        end
        i, ls, lsq, prev = i + cnt[j], ls + sy[j], lsq + syy[j], j
        cnt[j], sy[j], syy[j] = 0, 0, 0
      end
    end
  end
  if not best_f then return leaf(out, mean) end
  local left, right = {}, {}
  for _, r in ipairs(idx) do
    if X[r][best_f] <= best_t then left[#left + 1] = r else right[#right + 1] = r end
  end
  local i = leaf(out, 0)
  out.F[i], out.T[i] = best_f, best_t
  out.L[i] = build(X, y, left, depth + 1, opts, rng, L, out)
  out.R[i] = build(X, y, right, depth + 1, opts, rng, L, out)
  return i
end

-- Per feature the distinct values of X in order and each row's index among them.
local function levels(X)
  local d, values, rank = #X[1], {}, {}
  local most = 0
  for r = 1, #X do rank[r] = {} end
  for f = 1, d do
    local seen, vals = {}, {}
    for r = 1, #X do
      local v = X[r][f]
      if not seen[v] then seen[v] = true vals[#vals + 1] = v end
    end
    table.sort(vals)
    local at = {}
    for j, v in ipairs(vals) do at[v] = j end
    for r = 1, #X do rank[r][f] = at[X[r][f]] end
    values[f] = vals
    most = math.max(most, #vals)
  end
  local cnt, sy, syy = {}, {}, {}
  for j = 1, most do cnt[j], sy[j], syy[j] = 0, 0, 0 end
  return { values = values, rank = rank, cnt = cnt, sy = sy, syy = syy }
end

local Forest = {}
Forest.__index = Forest

M.EXPLOIT = 2
M.defaults = { trees = 32, min_leaf = 1, max_depth = 12, feature_fraction = 0.33 }

-- Fits a forest to rows X (feature vectors) and targets y; bootstrap samples per tree.
function M.fit(X, y, rng, opts)
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local n = #X
  local f = { F = {}, T = {}, L = {}, R = {}, V = {}, roots = {} }
  local L = n > 0 and levels(X) or nil
  for t = 1, o.trees do
    slice.point() -- (a sliced think yields here: kloop.search.slice)
    local idx = {}
    for i = 1, n do idx[i] = rng:int(1, n) end
    f.roots[t] = build(X, y, idx, 0, o, rng, L, f)
  end
  return setmetatable(f, Forest)
end

-- Mean and standard deviation of the trees' predictions at x.
function Forest:predict(x)
  local F, T, Lc, Rc, V, roots = self.F, self.T, self.L, self.R, self.V, self.roots
  local s, sq, k = 0, 0, #roots
  for t = 1, k do
    local i = roots[t]
    local f = F[i]
    while f ~= 0 do
      if x[f] <= T[i] then i = Lc[i] else i = Rc[i] end
      f = F[i]
    end
    local v = V[i]
    s, sq = s + v, sq + v * v
  end
  local mean = s / k
  return mean, math.sqrt(math.max(sq / k - mean * mean, 0))
end

-- Expected improvement below `best` for a prediction (mean, sd); xi keeps some exploration.
local SQRT2 = math.sqrt(2)
local function erf(x)
  -- Abramowitz and Stegun 7.1.26 (max error 1.5e-7), plenty for ranking candidates
  local s = x < 0 and -1 or 1
  x = math.abs(x)
  local t = 1 / (1 + 0.3275911 * x)
  local yv = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * math.exp(-x * x)
  return s * yv
end

function M.expected_improvement(mean, sd, best, xi)
  local imp = best - mean - (xi or 0)
  if sd < 1e-12 then return math.max(imp, 0) end
  local z = imp / sd
  local cdf = 0.5 * (1 + erf(z / SQRT2))
  local pdf = math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
  return imp * cdf + sd * pdf
end

-- Picks up to k points of pool (feature vectors xs) by expected improvement under a
-- model of (X, y), one at a time: each pick is added to the data at its predicted mean
-- ("believer") so the next one looks elsewhere. opts.favour(i) marks points preferred
-- where nearly as good (compiled ahead). Returns indices into pool and the best EI.
M.FAVOUR_EI, M.FAVOUR_MEAN = 0.7, 0.02

-- Whether a point (ei, mean) beats the choice so far (cei, cmean; cmean nil: none yet):
-- a greedy pick by the lowest predicted time, else by the highest EI, ties to the lower time.
local function better(greedy, ei, mean, cei, cmean)
  if greedy then return not cmean or mean < cmean end
  return ei > cei or (ei == cei and cmean ~= nil and mean < cmean)
end

function M.pick(X, y, xs, k, rng, opts)
  opts = opts or {}
  local X2, y2 = {}, {}
  local cap = opts.max_rows or 300
  if #X <= cap then
    for i = 1, #X do X2[i], y2[i] = X[i], y[i] end
  else
    -- a long search: the model learns from the best two thirds of the cap and a random
    -- rest (where the optimum is matters; the far slopes need only a sketch)
    local order = {}
    for i = 1, #X do order[i] = i end
    table.sort(order, function(a, b) return y[a] < y[b] end)
    local keep = math.floor(cap * 2 / 3)
    for r = 1, keep do X2[r], y2[r] = X[order[r]], y[order[r]] end
    for _ = keep + 1, cap do
      local i = order[rng:int(keep + 1, #X)]
      X2[#X2 + 1], y2[#y2 + 1] = X[i], y[i]
    end
  end
  -- points proposed and not yet measured (opts.pending: feature vectors) join the data
  -- at their predicted means, as the picks below do, so none is chosen twice over
  if opts.pending and #opts.pending > 0 and #X2 > 0 then
    local f = M.fit(X2, y2, rng, opts.forest)
    for _, x in ipairs(opts.pending) do
      local mean = f:predict(x)
      X2[#X2 + 1], y2[#y2 + 1] = x, mean
    end
  end
  local chosen, taken, top_ei = {}, {}, nil
  -- past a few hundred observations one fit serves the whole batch (top k by EI):
  -- refitting per pick costs more than it changes
  local refit = #X <= (opts.refit_below or 200)
  local forest
  local means, sds = {}, {} -- the forest's predictions, kept while it is not refitted
  for _ = 1, math.min(k, #xs) do
    if refit or not forest then
      forest = M.fit(X2, y2, rng, opts.forest)
      means, sds = {}, {}
    end
    local best = math.huge
    for _, v in ipairs(y2) do best = math.min(best, v) end
    -- every `exploit`-th pick (counted from opts.offset, so it alternates across calls
    -- too) takes the lowest predicted time instead of the highest EI (0: never): EI
    -- alone keeps exploring where a small budget needs to close in (docs/BENCHMARKS.md)
    local exploit = opts.exploit or M.EXPLOIT
    local greedy = exploit > 0 and ((opts.offset or 0) + #chosen) % exploit == exploit - 1
    local bi, bei, bmean = nil, -1, nil
    local fi, fei, fmean = nil, -1, nil -- the same choice among the favoured points
    local favour = opts.favour
    for i, x in ipairs(xs) do
      if not taken[i] then
        local mean, sd = means[i], sds[i]
        if not mean then
          if i % 64 == 0 then slice.point() end
          mean, sd = forest:predict(x)
          means[i], sds[i] = mean, sd
        end
        local ei = M.expected_improvement(mean, sd, best, opts.xi or 0.001)
        if better(greedy, ei, mean, bei, bmean) then bi, bei, bmean = i, ei, mean end
        if favour and favour(i) and better(greedy, ei, mean, fei, fmean) then fi, fei, fmean = i, ei, mean end
      end
    end
    if not bi then break end
    top_ei = top_ei or bei -- (the stop rule reads the model's best, favoured or not)
    -- a favoured point (compiled ahead) in place of the first choice when the model
    -- rates it nearly as high: EI at least FAVOUR_EI of the best's, or a predicted time
    -- within FAVOUR_MEAN (in log time) of the lowest for a greedy pick
    if fi and fi ~= bi then
      if (greedy and fmean <= bmean + (opts.favour_mean or M.FAVOUR_MEAN))
        or (not greedy and fei >= (opts.favour_ei or M.FAVOUR_EI) * bei) then
        bi, bmean = fi, fmean
      end
    end
    chosen[#chosen + 1] = bi
    taken[bi] = true
    X2[#X2 + 1], y2[#y2 + 1] = xs[bi], bmean
  end
  return chosen, top_ei or 0
end

return M
