-- kloop.search.tune: the tune proposer: points of a task's parameter space (exhaustive,
-- random, neighbours), passed to the kernel as -D defines. No network.
local util = require("kloop.util")

local M = {}

-- The space: sorted names, the values of each, its size, an optional constraint.
-- implicit: add the implicit parameters (always when the task declares none).
function M.space(task, implicit)
  local values = {}
  for k, v in pairs(task.params or {}) do values[k] = v end
  local declared = next(values) ~= nil
  if implicit or not declared then
    for k, v in pairs(M.implicit_params(task)) do values[k] = v end
  end
  local names = util.sorted_keys(values)
  local size = 1
  for _, n in ipairs(names) do size = size * #values[n] end
  local constraint = task.constraint
  if constraint and not declared then constraint = nil end
  return { names = names, values = values, size = #names > 0 and size or 0, constraint = constraint,
    implicit = not declared or implicit or nil }
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

-- Parameters of any CUDA kernel, for a task that declares none (or beside its own, on
-- request): the block shape of the task's launch plan (with as many threads along each
-- dimension: kloop.eval.reshape), a register cap, and fast math where the tolerance is
-- loose enough to let verification decide. Names start with kloop_ (kloop.eval turns
-- them into a plan and compiler options, never -D defines).
function M.implicit_params(task)
  if task.backend ~= "cuda" then return {} end
  local plan = require("kloop.eval.plan")
  local ok, p = pcall(plan.for_task, task, task.sizes.bench)
  if not ok or #p ~= 1 then return {} end
  local b = p[1].block
  local shapes
  if b[2] == 1 and b[3] == 1 then
    shapes = { "64", "128", "256", "512", "1024" }
  else
    shapes = { "8x8", "16x8", "8x16", "16x16", "32x8", "8x32", "32x16", "16x32", "32x32", "64x4", "4x64", "64x8", "8x64", "128x2" }
  end
  local own = b[3] == 1 and (b[2] == 1 and tostring(b[1]) or (b[1] .. "x" .. b[2])) or nil
  local have = false
  for _, s in ipairs(shapes) do if s == own then have = true end end
  if own and not have then table.insert(shapes, 1, own) end
  local params = { kloop_block = shapes, kloop_maxrreg = { 0, 32, 64, 128 } }
  if (task.tolerance and task.tolerance.rel or 0) >= 1e-6 then params.kloop_fast_math = { 0, 1 } end
  return params
end

-- A candidate for a point: the task's kernel with the point's defines.
function M.candidate(task, p, parent)
  return { source = task.source, defines = p, proposer = "tune", parent = parent }
end

return M
