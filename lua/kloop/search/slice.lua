-- kloop.search.slice: a strategy's think (kloop.search.driver arm_think) cut into short
-- slices, so that the driver keeps the worker fed while it runs. A think of a model
-- search fits forests for 0.1-0.4 s (H200 machine, gemm_tiled model 100), and a worker
-- request of a millisecond kernel returns in about 0.1 s: run whole inside the request's
-- wait, the think kept the GPU idle for the rest of it. Sliced, the worker's wait reads
-- the reply between slices, and the next request goes out at once.
--
-- Long loops call M.point(): inside a sliced think, once its slice's quantum is spent, it
-- yields to the driver; anywhere else (a propose, a bench, a spec) it does nothing. A
-- slice never changes what the think computes, only when: the driver settles no result
-- of the batch before the think is done (kloop.search.driver evaluate_ready_first).
local sys = require("kloop.core.sys")

local M = {}

-- the slice's length: the most a reply waits for the think to yield
M.QUANTUM = 0.002
-- (false: the driver runs each think whole, inside the request it begins in; specs)
M.enabled = true

local active, deadline, held = nil, 0, 0

-- Yields to the driver where a sliced think runs and its quantum is spent.
function M.point()
  if active and held == 0 and sys.now() >= deadline and coroutine.running() == active then
    coroutine.yield()
  end
end

-- fn(...) with no yield inside (work on swapped state, such as a strategy's look on
-- copies: the driver must not run while the swap is in place). Returns fn's results.
function M.whole(fn, ...)
  held = held + 1
  local res = { pcall(fn, ...) }
  held = held - 1
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

local Job = {}
Job.__index = Job

-- A job for fn (no arguments, no results: the think hook), not started yet.
function M.job(fn)
  return setmetatable({ co = coroutine.create(fn), done = false }, Job)
end

-- Runs the job for one slice (quantum seconds; default M.QUANTUM). Returns true when it is done.
-- An error inside it is raised here.
function Job:step(quantum)
  if self.done then return true end
  local outer_active, outer_deadline = active, deadline
  active, deadline = self.co, sys.now() + (quantum or M.QUANTUM)
  local ok, err = coroutine.resume(self.co)
  active, deadline = outer_active, outer_deadline
  if not ok then
    self.done = true
    error(err, 0)
  end
  if coroutine.status(self.co) == "dead" then self.done = true end
  return self.done
end

-- Runs the job to its end.
function Job:finish()
  while not self:step(math.huge) do end
end

return M
