-- kloop.eval.stats: medians and confidence intervals of timing samples.
local M = {}

local function sorted(xs)
  local s = {}
  for i = 1, #xs do s[i] = xs[i] end
  table.sort(s)
  return s
end

local function median_sorted(s)
  local n = #s
  if n == 0 then return 0 / 0 end
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end

function M.median(xs) return median_sorted(sorted(xs)) end

-- Distribution-free 95% CI of the median from order statistics (ranks n/2 -+ 0.98 sqrt(n)).
function M.median_ci(xs)
  local s = sorted(xs)
  local n = #s
  local med = median_sorted(s)
  if n < 3 then return med, s[1], s[n] end
  local half = 0.98 * math.sqrt(n)
  local lo = math.max(1, math.floor(n / 2 - half))
  local hi = math.min(n, math.ceil(n / 2 + 1 + half))
  return med, s[lo], s[hi]
end

-- Percentile-bootstrap 95% CI of the median (deterministic resampling seed).
function M.bootstrap_ci(xs, rounds, seed)
  local n = #xs
  if n < 2 then return xs[1], xs[1] end
  rounds = rounds or 400
  local state = seed or 0x2545F491
  local function rnd()
    -- xorshift32: reproducible, no global RNG state touched
    state = bit.bxor(state, bit.lshift(state, 13))
    state = bit.bxor(state, bit.rshift(state, 17))
    state = bit.bxor(state, bit.lshift(state, 5))
    return (state % n + n) % n + 1
  end
  local meds, buf = {}, {}
  for r = 1, rounds do
    for i = 1, n do buf[i] = xs[rnd()] end
    table.sort(buf)
    meds[r] = median_sorted(buf)
  end
  table.sort(meds)
  return meds[math.max(1, math.floor(rounds * 0.025))], meds[math.min(rounds, math.ceil(rounds * 0.975))]
end

-- The ratio of two interleaved series a and b (a[r] and b[r] timed next to each other,
-- in ABBA blocks: kloop.worker.protocol). Each block of two pairs gives one ratio, the
-- geometric mean of its two pairs' a/b, so a cost of the first place in a pair cancels
-- within the block; the estimate is the median of the block ratios and the 95% CI is
-- the sign test's (median_ci) of that same median: distribution-free, and it needs no
-- symmetry of a skewed ratio distribution. A last pair without its partner is left out.
-- Returns ratio, lo, hi, blocks (nil when there is no complete pair).
--
-- PAIRED_MIN_REPS: the fewest repetitions a comparison takes (6 blocks: with fewer, no
-- sign-test interval reaches 95%).
M.PAIRED_MIN_REPS = 12

function M.paired_ratio(a, b)
  local n = math.min(#a, #b)
  local blocks = {}
  for k = 1, math.floor(n / 2) do
    local r1, r2 = a[2 * k - 1] / b[2 * k - 1], a[2 * k] / b[2 * k]
    blocks[k] = math.sqrt(r1 * r2)
  end
  if #blocks == 0 then
    if n == 0 then return nil end
    local r1 = a[1] / b[1]
    return r1, r1, r1, 0
  end
  local med, lo, hi = M.median_ci(blocks)
  return med, lo, hi, #blocks
end

function M.summarize(xs)
  local s = sorted(xs)
  local n = #s
  local med = median_sorted(s)
  local lo, hi = M.bootstrap_ci(xs)
  local p10 = s[math.max(1, math.floor(n * 0.1 + 0.5))]
  local p90 = s[math.min(n, math.floor(n * 0.9 + 0.5))]
  return { n = n, median = med, min = s[1], max = s[n], ci_lo = lo, ci_hi = hi,
    spread = med > 0 and (p90 - p10) / med or 0 }
end

return M
