-- kloop.tune: the tune proposer: points of a task's parameter space (exhaustive,
-- random, neighbours), passed to the kernel as -D defines. No network.
local util = require("kloop.util")

local M = {}

-- The space: sorted names, the values of each, its size, an optional constraint.
function M.space(task)
  local names = util.sorted_keys(task.params or {})
  local size = 1
  for _, n in ipairs(names) do size = size * #task.params[n] end
  return { names = names, values = task.params, size = #names > 0 and size or 0, constraint = task.constraint }
end

function M.key(p)
  local parts = {}
  for _, k in ipairs(util.sorted_keys(p)) do parts[#parts + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(parts, ",")
end

local function valid(space, p)
  if not space.constraint then return true end
  local ok, v = pcall(space.constraint, p)
  return ok and v
end

-- Every point (filtered by the constraint), in a deterministic order.
function M.all(space)
  local out = {}
  local function rec(i, p)
    if i > #space.names then
      local q = {}
      for k, v in pairs(p) do q[k] = v end
      if valid(space, q) then out[#out + 1] = q end
      return
    end
    local n = space.names[i]
    for _, v in ipairs(space.values[n]) do
      p[n] = v
      rec(i + 1, p)
    end
    p[n] = nil
  end
  if space.size > 0 then rec(1, {}) end
  return out
end

function M.random(space, rng, tries)
  for _ = 1, tries or 100 do
    local p = {}
    for _, n in ipairs(space.names) do p[n] = rng:pick(space.values[n]) end
    if valid(space, p) then return p end
  end
end

-- Points one step away: one parameter moved to an adjacent value.
function M.neighbours(space, p)
  local out = {}
  for _, n in ipairs(space.names) do
    local vals = space.values[n]
    for i, v in ipairs(vals) do
      if v == p[n] then
        for _, j in ipairs({ i - 1, i + 1 }) do
          if vals[j] ~= nil then
            local q = {}
            for k, x in pairs(p) do q[k] = x end
            q[n] = vals[j]
            if valid(space, q) then out[#out + 1] = q end
          end
        end
      end
    end
  end
  return out
end

-- A candidate for a point: the task's kernel with the point's defines.
function M.candidate(task, p, parent)
  return { source = task.source, defines = p, proposer = "tune", parent = parent }
end

return M
