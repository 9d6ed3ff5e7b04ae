-- kloop.search.pool: several evaluators (each with its own worker) serving one search:
-- `--workers N` (a CPU task: N local workers), `--gpus all|0,1,...` (a worker per GPU),
-- `--remote-workers SOCK,...` (workers on other hosts, through kloop-mpi: docs/SCALE.md).
-- The driver hands the pool a batch; each candidate runs on an idle worker as a
-- coroutine that yields while its worker computes (kloop.eval.worker_client's request in
-- cooperative mode), and the results come back by the batch's index, so the store and
-- the strategy see the same sequence whichever worker finished first.
local proc = require("kloop.core.proc")
local compile = require("kloop.eval.compile")
local sys = require("kloop.core.sys")

local M = {}

local Pool = {}
Pool.__index = Pool

-- A worker whose evaluations fail for kloop's reasons (it cannot be started, its host
-- went away) this many times in a row is left out for the rest of the run.
M.DEAD_AFTER = 2

-- evs: the evaluators; evs[1] is the driver's own (A/B comparisons and profiles run there).
function M.new(evs)
  for i, ev in ipairs(evs) do
    ev.cooperative = true
    ev.pool_index = i
  end
  return setmetatable({ evs = evs, retried = 0, left_out = {} }, Pool)
end

function Pool:size() return #self.evs end

function Pool:alive()
  local n = 0
  for _, ev in ipairs(self.evs) do if not ev.pool_dead then n = n + 1 end end
  return n
end

-- The worker a candidate may start on: idle, alive, and (for a retry) not one it failed on.
function Pool:idle(avoid)
  local fallback
  for _, ev in ipairs(self.evs) do
    if not ev.pool_busy and not ev.pool_dead then
      if not (avoid and avoid[ev]) then return ev end
      fallback = fallback or ev
    end
  end
  -- a retry with every other worker gone: the same one (its worker restarted)
  if fallback and self:alive() == 1 then return fallback end
  return nil
end

-- What a result says about the worker it ran on: the index and the GPU.
local function tag(r, ev, many)
  if not many or type(r) ~= "table" then return end
  r.worker = { index = ev.pool_index, device = ev.opts.device, uuid = ev.gpu and ev.gpu.uuid or nil,
    remote = ev.opts.worker_argv and ev.opts.worker_argv[3] or nil }
end

-- Runs run(cand, ev) for every candidate of `list` on idle workers and returns the
-- results by index. hooks: start(cand) in the main thread just before cand starts
-- (the store records it); stop() true to start nothing more (a budget spent); pump()
-- while waiting (an LLM proposer's transfers). A result with infrastructure = true (the
-- worker died or could not start) is retried once on another worker; the result says
-- so (result.retry). An error in one evaluation (Ctrl-C) stops the others' workers and
-- is raised once the pool is quiet.
function Pool:run(list, run, hooks)
  hooks = hooks or {}
  local many = #self.evs > 1
  local results, queue, running = {}, {}, {}
  local avoid, first_failure = {}, {}
  for i = 1, #list do queue[i] = i end
  local err
  local function finish(slot, ok, r)
    local ev, i = slot.ev, slot.i
    ev.pool_busy = false
    running[slot] = nil
    if not ok then err = err or r return end
    -- (a compile cache that cannot keep binaries fails on every worker alike: no retry,
    -- and no worker is blamed; the driver stops the run on it)
    if type(r) == "table" and r.infrastructure and not r.cache_error then
      ev.pool_fails = (ev.pool_fails or 0) + 1
      if ev.pool_fails >= M.DEAD_AFTER and not ev.pool_dead then
        ev.pool_dead = true
        self.left_out[#self.left_out + 1] = { index = ev.pool_index, reason = tostring(r.reason) }
      end
      if not first_failure[i] then
        first_failure[i] = { worker = ev.pool_index, verdict = r.verdict, reason = r.reason }
        avoid[i] = { [ev] = true }
        self.retried = self.retried + 1
        table.insert(queue, 1, i)
        return
      end
    else
      ev.pool_fails = 0
    end
    tag(r, ev, many)
    if first_failure[i] and type(r) == "table" then r.retry = first_failure[i] end
    results[i] = r
  end
  local function step(slot)
    slot.woke = sys.now()
    local ok, r = coroutine.resume(slot.co)
    if not ok or coroutine.status(slot.co) == "dead" then finish(slot, ok, r) end
  end
  while not err and (#queue > 0 or next(running)) do
    while not err and #queue > 0 do
      local i = queue[1]
      local retry = first_failure[i] ~= nil
      if not retry and hooks.stop and hooks.stop() then queue = {} break end
      local ev = self:idle(avoid[i])
      if not ev then
        if self:alive() == 0 then
          -- no worker left: what could not run says so
          for _, j in ipairs(queue) do
            results[j] = { verdict = "launch_error", infrastructure = true, retry = first_failure[j],
              reason = "no worker left in the pool (each failed " .. M.DEAD_AFTER .. " times in a row)" }
          end
          queue = {}
        end
        break
      end
      table.remove(queue, 1)
      if not retry and hooks.start then hooks.start(list[i]) end
      ev.pool_busy = true
      local cand = list[i]
      local slot = { ev = ev, i = i, co = coroutine.create(function() return run(cand, ev) end) }
      running[slot] = true
      step(slot)
    end
    if err or not next(running) then break end
    if hooks.pump then hooks.pump() end
    -- wait for a reply from any busy worker; every so often wake them all, so each
    -- checks its own deadline
    local slots, procs = {}, {}
    for slot in pairs(running) do
      if slot.ev.proc then
        slots[#slots + 1], procs[#procs + 1] = slot, slot.ev.proc
      else
        step(slot) -- its worker is gone: it finds out
      end
    end
    if #procs > 0 then
      -- (the background compilers are read meanwhile, as one worker's request does)
      local k = proc.wait_any(procs, compile.pump(0) > 0 and 0.005 or 0.25)
      if k then step(slots[k]) end
      -- and every worker not woken for a while, so each checks its own deadline even
      -- while the others keep replying
      local now = sys.now()
      for _, s in ipairs(slots) do
        if running[s] and (not k or now - (s.woke or 0) > 0.25) and s ~= slots[k or 0] then step(s) end
      end
    end
    if sys.interrupted() then err = err or sys.INTERRUPTED end
  end
  if err then
    for slot in pairs(running) do
      slot.ev.pool_busy = false
      pcall(slot.ev.kill, slot.ev) -- its reply will never be read
    end
    error(err, 0)
  end
  return results
end

-- Closes every evaluator but the driver's own (the driver closes that one).
function Pool:close_others()
  for i = 2, #self.evs do pcall(self.evs[i].close, self.evs[i]) end
end

return M
