-- bench/kt_gpu/points.lua: a strategy that evaluates exactly the parameter points of a
-- file, in its order, a batch at a time, and then ends: the same points Kernel Tuner is
-- given (bench/kt_gpu/README.md). A point that is not in the task's space is refused at
-- the start, so a typo never turns into a shorter or different run.
-- usage: kloop bench/kt_gpu/points.lua TARGET --points FILE [--budget N] [--batch 4]
-- FILE: a header line of parameter names, then one point per line (tab or space
-- separated values). Every declared parameter must be given; kloop's implicit ones
-- (kloop_block, ...) may be, and where left out the task's own launch and options hold.
-- luacheck: read globals kloop

local S = {
  name = "points",
  description = "evaluate the parameter points listed in a file, in order, then stop",
  requires = { api = 1 },
  options = {
    { "points", "", "the points: a header line of parameter names, then one point per line" },
    { "batch", 4, "candidates proposed per step (compiled together)" },
  },
}

local function split(line)
  local out = {}
  for w in line:gmatch("[^%s]+") do out[#out + 1] = w end
  return out
end

-- The space's value whose text is `text` (so 16 stays a number and "256" a string).
local function value_of(values, text)
  for _, v in ipairs(values) do
    if tostring(v) == text then return v end
  end
end

-- Reads and checks the file against the task's space (declared and implicit params):
-- the list of points, or raises a plain message naming the line (not "file:line:", which
-- the driver takes for a bug's position and answers with a traceback).
function S.read(path, task)
  local f, err = io.open(path, "r")
  if not f then error("--points: " .. tostring(err), 0) end
  local lines = {}
  for line in f:lines() do lines[#lines + 1] = line end
  f:close()
  local function fail(n, fmt, ...)
    error(string.format("--points %s, line %d: " .. fmt, path, n, ...), 0)
  end
  local space = kloop.tune.space(task, true)
  local names, points, seen = nil, {}, {}
  for n, line in ipairs(lines) do
    local words = split(line)
    if #words == 0 or words[1]:sub(1, 1) == "#" then
      -- blank lines and comments
    elseif not names then
      names = words
      local given = {}
      for _, name in ipairs(names) do
        if not space.values[name] then fail(n, "%s is not a parameter of task %s", name, task.name) end
        if given[name] then fail(n, "%s is named twice", name) end
        given[name] = true
      end
      for name in pairs(task.params or {}) do
        if not given[name] then fail(n, "the header lacks %s", name) end
      end
    else
      if #words ~= #names then fail(n, "%d values for %d names", #words, #names) end
      local p = {}
      for i, name in ipairs(names) do
        p[name] = value_of(space.values[name], words[i])
        if p[name] == nil then fail(n, "%s=%s is not among the task's values", name, words[i]) end
      end
      local ok, fits = true, true
      if space.constraint then ok, fits = pcall(space.constraint, p) end
      local key = kloop.tune.key(p)
      if not (ok and fits) then fail(n, "%s fails the task's constraint", key) end
      if seen[key] then fail(n, "%s is listed twice", key) end
      seen[key] = true
      points[#points + 1] = p
    end
  end
  if #points == 0 then error("--points " .. path .. ": no points", 0) end
  return points
end

function S.init(ctx)
  if ctx.opts.points == "" then error("give --points FILE", 0) end
  ctx.points = S.read(ctx.opts.points, ctx.task)
  if ctx.opts.budget < #ctx.points then
    error(string.format("--budget %d is below the %d points of %s: give --budget %d", ctx.opts.budget,
      #ctx.points, ctx.opts.points, #ctx.points), 0)
  end
  ctx.next = 1
end

function S.propose(ctx)
  local out = {}
  while #out < ctx.opts.batch and ctx.next <= #ctx.points do
    out[#out + 1] = kloop.tune.candidate(ctx.task, ctx.points[ctx.next])
    ctx.next = ctx.next + 1
  end
  return out -- empty once every point was proposed: the run ends
end

-- The points that come next (the driver compiles them ahead, as for tune)
function S.upcoming(ctx, n)
  local out = {}
  for i = ctx.next, math.min(#ctx.points, ctx.next + n - 1) do
    out[#out + 1] = kloop.tune.candidate(ctx.task, ctx.points[i])
  end
  return out
end

function S.done(ctx)
  if not ctx.opts.quiet and ctx.points and ctx.next then
    print(string.format("points: %d of %d proposed", ctx.next - 1, #ctx.points))
  end
end

return S
