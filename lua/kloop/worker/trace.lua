-- kloop.worker.trace: where a worker's time goes. With the hello request's trace = true,
-- every backend call is timed (wall seconds and calls per function, plus the time
-- spent in the worker's own Lua between them), and each candidate reply carries the
-- totals of its request as result.worker_trace. bench/eval_breakdown.lua prints them.
local sys = require("kloop.core.sys")

local M = {}

-- f timed into acc[name] ({n, s}): calls and wall seconds of its own (a backend call
-- made inside another, the protocol's `beside` inside check_regions, is its own, not the
-- outer one's). With spans (the timeline), each call's own intervals by clock() (ns) are
-- appended too, {name, t0, t1}, in order and not overlapping: the outer call's is cut
-- where an inner one runs. stack: the calls open now, shared by the wrapped functions.
local function timed(f, acc, name, spans, clock, stack)
  return function(...)
    local t0 = sys.now()
    local c0 = spans and clock()
    local outer = stack[#stack]
    if outer then
      outer.own = outer.own + (t0 - outer.t)
      if spans then spans[#spans + 1] = { outer.name, outer.c, c0 } end
    end
    local me = { name = name, t = t0, c = c0, own = 0 }
    stack[#stack + 1] = me
    local r = { pcall(f, ...) }
    stack[#stack] = nil
    local t1 = sys.now()
    local c1 = spans and clock()
    me.own = me.own + (t1 - me.t)
    if spans then spans[#spans + 1] = { name, me.c, c1 } end
    if outer then outer.t, outer.c = t1, c1 end
    local e = acc[name]
    if not e then e = { n = 0, s = 0 } acc[name] = e end
    e.n, e.s = e.n + 1, e.s + me.own
    if not r[1] then error(r[2], 0) end
    return unpack(r, 2, table.maxn(r))
  end
end

-- The backend `be` with every function timed into `acc` (name -> {n, s}); with spans
-- and clock (the timeline: be.clock_ns), every call's interval is kept in spans too.
function M.wrap(be, acc, spans, clock)
  local w = setmetatable({}, { __index = be })
  local stack = {}
  for k, f in pairs(be) do
    if type(f) == "function" and k ~= "clock_ns" then w[k] = timed(f, acc, k, spans, clock, stack) end
  end
  return w
end

-- A module's functions (kloop.core.buf's host passes: fill, digest, compare, mask)
-- timed in place into `acc`, under prefix .. name; once per module.
function M.wrap_module(mod, acc, prefix)
  if mod.__kloop_traced then return end
  mod.__kloop_traced = true
  local stack = {}
  for k, f in pairs(mod) do
    if type(f) == "function" then mod[k] = timed(f, acc, prefix .. k, nil, nil, stack) end
  end
end

-- The totals of one request: {fn = {n, s}, _request = seconds, _lua = seconds outside
-- the backend}, and acc emptied for the next.
function M.take(acc, seconds)
  local out, inside = {}, 0
  for k, e in pairs(acc) do
    out[k] = { n = e.n, s = e.s }
    inside = inside + e.s
    acc[k] = nil
  end
  out._request = { n = 1, s = seconds }
  out._lua = { n = 1, s = math.max(0, seconds - inside) }
  return out
end

-- Where the GPU idled within [t0, t1] (ns, the records' clock): recs are the GPU's
-- activities ({name, start_ns, end_ns}: kernels, copies, fills), spans the backend calls
-- the worker made ({name, t0, t1}, in order, not nested). Every idle stretch (no activity
-- running) is split over the calls that ran during it, by name; what no call covers is
-- "_lua" (the worker's own work, or waiting for the parent). Returns {busy, idle
-- (seconds), by_call = {name -> seconds}, by_pair = {"op before -> op after" -> {n, s}},
-- by_op = {operation -> {n, s}} (the GPU's busy time by what ran: a kernel's name, a
-- copy's kind), gaps = count of idle stretches of min_ns or more, ops = #recs}.
function M.idle_split(recs, spans, t0, t1, min_ns)
  min_ns = min_ns or 0
  local list = {}
  for _, r in ipairs(recs) do
    if r.end_ns > t0 and r.start_ns < t1 then list[#list + 1] = r end
  end
  table.sort(list, function(a, b) return a.start_ns < b.start_ns end)
  local out = { busy = 0, idle = 0, by_call = {}, by_pair = {}, by_op = {}, gaps = 0, ops = #list }
  for _, r in ipairs(list) do
    -- (each operation's own length, clipped: what the GPU's busy time went to, by name;
    -- a copy's or fill's size dropped from its name)
    local name = r.name:gsub(" %d+%]$", "]")
    local len = (math.min(r.end_ns, t1) - math.max(r.start_ns, t0)) / 1e9
    local o = out.by_op[name] or { n = 0, s = 0 }
    o.n, o.s = o.n + 1, o.s + len
    out.by_op[name] = o
  end
  local k = 1 -- the first span that could overlap the next gap
  local function idle(a, b, before, after)
    if b - a < min_ns or b <= a then
      out.busy = out.busy + math.max(0, b - a) / 1e9 -- (a short gap: counted as busy)
      return
    end
    out.gaps = out.gaps + 1
    out.idle = out.idle + (b - a) / 1e9
    local pair = (before or "start") .. " -> " .. (after or "end")
    local p = out.by_pair[pair] or { n = 0, s = 0 }
    p.n, p.s = p.n + 1, p.s + (b - a) / 1e9
    out.by_pair[pair] = p
    while spans[k] and spans[k][3] <= a do k = k + 1 end
    local covered, j = 0, k
    while spans[j] and spans[j][2] < b do
      local lo, hi = math.max(a, spans[j][2]), math.min(b, spans[j][3])
      if hi > lo then
        out.by_call[spans[j][1]] = (out.by_call[spans[j][1]] or 0) + (hi - lo) / 1e9
        covered = covered + (hi - lo)
      end
      j = j + 1
    end
    if b - a > covered then out.by_call._lua = (out.by_call._lua or 0) + (b - a - covered) / 1e9 end
  end
  local at, last = t0, nil
  for _, r in ipairs(list) do
    local s, e = math.max(r.start_ns, t0), math.min(r.end_ns, t1)
    if s > at then idle(at, s, last, r.name) end
    if e > at then
      out.busy = out.busy + (e - math.max(s, at)) / 1e9
      at, last = e, r.name
    end
  end
  if t1 > at then idle(at, t1, last, nil) end
  return out
end

return M
