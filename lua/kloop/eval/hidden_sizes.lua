-- kloop.eval.hidden_sizes: the sizes a promotion verifies on that no search saw
-- (docs/PROMOTION.md): per size dimension, values drawn from the promotion secret between
-- and around the declared ones, a prime, 2^k+1, 1 and one larger than the bench size
-- within a memory cap, bounded or extended by the task's `sizes.promote`. Nothing here
-- is stored or shown: the caller uses the list at once and records it afterwards.
local sys = require("kloop.core.sys")
local buf = require("kloop.core.buf")
local util = require("kloop.util")
local sizes = require("kloop.eval.task_sizes")
local plan = require("kloop.eval.plan")

local M = {}

M.DEFAULT_COUNT = 16
M.DEFAULT_MAX_BYTES = 2 * 2^30

-- A deterministic draw in [lo, hi] from the secret and a label.
local function draw(secret, label, lo, hi)
  if hi <= lo then return lo end
  local h = sys.hash64(secret .. "/hidden/" .. label, 0x68696464ULL)
  return lo + tonumber(h % (hi - lo + 1))
end

local function is_prime(n)
  if n < 2 then return false end
  if n % 2 == 0 then return n == 2 end
  for d = 3, math.floor(math.sqrt(n)), 2 do if n % d == 0 then return false end end
  return true
end

local function next_prime(n)
  n = math.max(2, n)
  while not is_prime(n) do n = n + 1 end
  return n
end

-- The task's bounds for dimension k: {min, max, multiple_of, values}, all optional.
local function bounds_of(promote, k)
  local b = type(promote) == "table" and promote[k]
  return type(b) == "table" and b or {}
end

-- v brought inside the bounds (nil when no value fits).
local function fit(v, b)
  local m = b.multiple_of or 1
  if m > 1 then v = math.max(m, math.floor(v / m + 0.5) * m) end
  if b.min and v < b.min then v = m > 1 and math.ceil(b.min / m) * m or b.min end
  if b.max and v > b.max then v = m > 1 and math.floor(b.max / m) * m or b.max end
  if v < 0 or (b.min and v < b.min) then return nil end
  return v
end

-- Bytes of every buffer argument of the task at a size (the default point).
function M.bytes_at(task, size)
  local ok, args = pcall(sizes.concrete_args, task, size, sizes.default_point(task.params))
  if not ok then return nil end
  local total = 0
  for i, a in ipairs(task.args) do
    if a.pointer then total = total + args[i].count * buf.dtype_size(a.dtype) end
  end
  return total
end

-- Whether the task's launch plan evaluates at a size (its arguments do: bytes_at said so).
local function plan_runs_at(task, size)
  return (pcall(plan.for_task, task, size, nil, sizes.default_point(task.params)))
end

local function key_of(size, names)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = k .. "=" .. tostring(size[k]) end
  return table.concat(parts, ",")
end

-- "N=97" or "M=257,N=97,K=129" naming the dimensions that differ from the base.
function M.describe(size, names)
  return key_of(size, names or util.sorted_keys(size))
end

-- The hidden sizes of a task for a secret: a list of {size = {...}, why = "..."} and the
-- notes on values left out (bounds, memory, the task refusing the size). opts: count,
-- max_bytes (defaults from sizes.promote, else 16 and 2 GiB).
function M.generate(task, secret, opts)
  opts = opts or {}
  local promote = task.sizes.promote
  if type(promote) == "function" then promote = { extra = promote } end
  promote = promote or {}
  local count = opts.count or promote.count or M.DEFAULT_COUNT
  local max_bytes = opts.max_bytes or promote.max_bytes or M.DEFAULT_MAX_BYTES
  local bench, check = task.sizes.bench, task.sizes.check
  local names = util.sorted_keys(bench)
  local declared, seen = {}, {}
  for _, s in ipairs(check) do declared[#declared + 1] = s end
  declared[#declared + 1] = bench
  for _, s in ipairs(declared) do seen[key_of(s, names)] = true end
  local base = check[1] -- the other dimensions stay at the first check size
  local out, notes = {}, {}
  local function add(size, why)
    local key = key_of(size, names)
    if seen[key] then return end
    seen[key] = true
    local bytes = M.bytes_at(task, size)
    if not bytes then notes[#notes + 1] = key .. ": the task's sizes do not evaluate there" return end
    if bytes > max_bytes then
      notes[#notes + 1] = string.format("%s: %s of buffers, over the cap of %s", key, util.fmt_bytes(bytes),
        util.fmt_bytes(max_bytes))
      return
    end
    if not plan_runs_at(task, size) then notes[#notes + 1] = key .. ": the task's launch plan refuses it" return end
    out[#out + 1] = { size = size, why = why, bytes = bytes }
  end
  local function with(from, k, v)
    local s = {}
    for _, n in ipairs(names) do s[n] = from[n] end
    s[k] = v
    return s
  end
  -- candidate values per kind, round-robin over the dimensions so a small count still
  -- covers each dimension with the kinds that matter most
  local kinds = {}
  for _, k in ipairs(names) do
    local b = bounds_of(promote, k)
    local vals, vset = {}, {}
    for _, s in ipairs(declared) do
      if not vset[s[k]] then vset[s[k]] = true vals[#vals + 1] = s[k] end
    end
    table.sort(vals)
    local hi = vals[#vals]
    local smax = 1
    for _, s in ipairs(check) do smax = math.max(smax, s[k]) end
    local list = {}
    local function cand(kind, v, from) list[#list + 1] = { kind = kind, v = v, from = from or base } end
    cand("one", 1)
    local pk = draw(secret, k .. "/prime", 2, math.max(3, smax))
    cand("prime", next_prime(pk))
    local e = draw(secret, k .. "/pow2", 1, math.max(1, math.floor(math.log(math.max(smax, 2)) / math.log(2))))
    cand("2^k+1", 2 ^ e + 1)
    -- one past the bench size (the others at bench too), shrunk below to fit memory
    local step = math.max(1, draw(secret, k .. "/larger", 1, math.max(1, math.floor(bench[k] / 8))))
    cand("larger than bench", bench[k] + step, bench)
    for i = 1, #vals - 1 do
      if vals[i + 1] - vals[i] > 1 then
        cand("between " .. vals[i] .. " and " .. vals[i + 1], draw(secret, k .. "/between/" .. i, vals[i] + 1, vals[i + 1] - 1))
      end
    end
    for _, v in ipairs(vals) do
      if v ~= hi then
        cand("around " .. v, v + 1)
        if v > 1 then cand("around " .. v, v - 1) end
      end
    end
    for _, v in ipairs(b.values or {}) do cand("the task's value", v) end
    kinds[k] = list
  end
  local pending = {}
  local depth = 0
  for _, k in ipairs(names) do depth = math.max(depth, #kinds[k]) end
  for i = 1, depth do
    for _, k in ipairs(names) do
      local c = kinds[k][i]
      if c then pending[#pending + 1] = { k = k, c = c } end
    end
  end
  for _, p in ipairs(pending) do
    local b = bounds_of(promote, p.k)
    local v = fit(p.c.v, b)
    if v then
      local size = with(p.c.from, p.k, v)
      if p.c.kind == "larger than bench" and (M.bytes_at(task, size) or math.huge) > max_bytes then
        size = with(p.c.from, p.k, fit(bench[p.k] + (b.multiple_of or 1), b) or bench[p.k])
      end
      add(size, p.k .. ": " .. p.c.kind)
    else
      notes[#notes + 1] = string.format("%s: %s %s is outside the task's bounds", p.k, p.c.kind, tostring(p.c.v))
    end
  end
  -- a size odd in every dimension at once
  local all = {}
  for _, k in ipairs(names) do
    all[k] = fit(next_prime(draw(secret, k .. "/all", 2, math.max(3, base[k]))), bounds_of(promote, k)) or base[k]
  end
  add(all, "every dimension odd")
  -- the task's own: sizes.hidden (a list) and sizes.promote.extra (a list or a function)
  for _, s in ipairs(task.sizes.hidden or {}) do add(s, "sizes.hidden") end
  local extra = promote.extra
  if type(extra) == "function" then
    local ok, res = pcall(extra, bench, check)
    if not ok and sys.is_interrupt(res) then error(res, 0) end
    if ok and type(res) == "table" then extra = res
    else
      notes[#notes + 1] = "sizes.promote.extra failed: " .. tostring(res)
      extra = nil
    end
  end
  for _, s in ipairs(type(extra) == "table" and extra or {}) do
    local full = {}
    for _, n in ipairs(names) do full[n] = type(s[n]) == "number" and s[n] or base[n] end
    add(full, "sizes.promote.extra")
  end
  -- the cap keeps the first of each kind: the list above is in priority order, but the
  -- task's own sizes are always kept
  if #out > count then
    local kept = {}
    for _, h in ipairs(out) do
      if #kept < count or h.why:match("^sizes%.") then kept[#kept + 1] = h end
    end
    notes[#notes + 1] = string.format("%d sizes left out by the count of %d", #out - #kept, count)
    out = kept
  end
  return out, notes
end

return M
