-- kloop.eval.sentinel: defence in depth behind the worker's state checks: every
-- SENTINEL_EVERY candidates, and after SENTINEL_STREAK failed verifications in a row, the
-- fastest verified candidate so far is verified again in the same worker. If its verdict
-- changed, the worker cannot be trusted: it is restarted, and every candidate judged
-- since the last good sentinel is evaluated again; their result tables are updated in
-- place (result.reevaluated says what they had) and opts.on_reevaluate(result) is told.
-- The functions in `methods` are Evaluator methods (kloop.eval.evaluator installs them).
local M = {}
local S = {}
M.methods = S

M.SENTINEL_EVERY, M.SENTINEL_STREAK, M.SENTINEL_KEEP = 16, 4, 64
local FAILED_VERIFICATION = { wrong = true, unwritten = true, nan = true, inputs_modified = true,
  nondeterministic = true, out_of_bounds = true }

-- Screened results are judged too (evaluated again, as screens, when the sentinel
-- fails), but only full verifications count: the known-good candidate, the count
-- towards SENTINEL_EVERY and the streak of failures come from full evaluations alone.
function S:watch(src, opts, result)
  if self.in_sentinel or self.opts.sentinel == false or result.infrastructure then return end
  local v = result.verdict
  local full = result.stage ~= "screened"
  if full and v == "ok" and result.time_ms and (not self.sentinel or result.time_ms < self.sentinel.time_ms) then
    self.sentinel = { src = src, opts = { defines = opts.defines, name = opts.name }, time_ms = result.time_ms }
  end
  self.judged = self.judged or {}
  self.judged[#self.judged + 1] = { src = src, opts = opts, result = result }
  if #self.judged > M.SENTINEL_KEEP then table.remove(self.judged, 1) end
  if not full then return end
  self.streak = FAILED_VERIFICATION[v] and (self.streak or 0) + 1 or 0
  self.since_sentinel = (self.since_sentinel or 0) + 1
  if self.sentinel and (self.since_sentinel >= M.SENTINEL_EVERY or self.streak >= M.SENTINEL_STREAK) then
    self:run_sentinel()
  end
end

function S:run_sentinel()
  local s = self.sentinel
  self.in_sentinel = true
  self.since_sentinel, self.streak = 0, 0
  local r = self:submit("evaluate", s.src, { defines = s.opts.defines, name = s.opts.name }, { verify_only = true })
  self.sentinel_runs = (self.sentinel_runs or 0) + 1
  if r.verdict == "ok" or r.infrastructure then
    self.judged = {}
    self.in_sentinel = false
    return true
  end
  self.sentinel_trips = (self.sentinel_trips or 0) + 1
  self.log(string.format("sentinel: the known-good candidate now gets %s (%s); restarting the worker and evaluating %d candidates again",
    r.verdict, tostring(r.reason), #self.judged))
  self:kill()
  self.restarts = self.restarts + 1
  local again = self.judged
  self.judged = {}
  for _, j in ipairs(again) do
    local new = self:judge(j.result.stage == "screened" and "screened" or "full", j.src, j.opts or {})
    local old = j.result
    -- (kloop's own failure, a compile cache that cannot keep a binary, says nothing of
    -- the candidate: its result stays, and the driver stops on the evaluator's flag)
    if new.cache_error then break end
    local previous = { verdict = old.verdict, reason = old.reason, time_ms = old.time_ms }
    for k in pairs(old) do old[k] = nil end
    for k, v in pairs(new) do old[k] = v end
    old.reevaluated = { previous = previous, why = "the sentinel failed after it (" .. r.verdict .. ")" }
    if self.opts.on_reevaluate then self.opts.on_reevaluate(old) end
  end
  self.in_sentinel = false
  return false
end

return M
