-- kloop.worker.trace: where a worker's time goes. With the hello request's trace = true,
-- every backend call is timed (wall seconds and calls per function, plus the time
-- spent in the worker's own Lua between them), and each candidate reply carries the
-- totals of its request as result.worker_trace. bench/eval_breakdown.lua prints them.
local sys = require("kloop.core.sys")

local M = {}

-- f timed into acc[name] ({n, s}): calls and wall seconds.
local function timed(f, acc, name)
  return function(...)
    local t0 = sys.now()
    local r = { f(...) }
    local e = acc[name]
    if not e then e = { n = 0, s = 0 } acc[name] = e end
    e.n, e.s = e.n + 1, e.s + (sys.now() - t0)
    return unpack(r, 1, table.maxn(r))
  end
end

-- The backend `be` with every function timed into `acc` (name -> {n, s}).
function M.wrap(be, acc)
  local w = setmetatable({}, { __index = be })
  for k, f in pairs(be) do
    if type(f) == "function" then w[k] = timed(f, acc, k) end
  end
  return w
end

-- A module's functions (kloop.core.buf's host passes: fill, digest, compare, mask)
-- timed in place into `acc`, under prefix .. name; once per module.
function M.wrap_module(mod, acc, prefix)
  if mod.__kloop_traced then return end
  mod.__kloop_traced = true
  for k, f in pairs(mod) do
    if type(f) == "function" then mod[k] = timed(f, acc, prefix .. k) end
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

return M
