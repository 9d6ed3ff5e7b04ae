-- examples/strategies/hillclimb/moves.lua: the hillclimb package's choice of points:
-- unseen neighbours of the best point in a seeded order, else a random unseen point.
local M = {}

-- Marks p seen; returns it, or nil when it was seen already.
local function fresh(p, seen)
  local key = kloop.tune.key(p)
  if seen[key] then return nil end
  seen[key] = true
  return p
end

-- Up to n unseen neighbours of point here to evaluate next; with no point yet (or no
-- unseen neighbour), a random unseen point first, then up to n of its neighbours.
function M.next(space, here, seen, rng, n)
  local out = {}
  if not here then
    for _ = 1, 50 do
      local p = kloop.tune.random(space, rng)
      here = p and fresh(p, seen)
      if here then break end
    end
    if not here then return out end
    out[1] = here
  end
  local near = kloop.tune.neighbours(space, here)
  rng:shuffle(near) -- the run seed decides the order
  local start = #out
  for _, p in ipairs(near) do
    if #out - start >= n then break end
    out[#out + 1] = fresh(p, seen)
  end
  if #out == 0 then return M.next(space, nil, seen, rng, n) end
  return out
end

return M
