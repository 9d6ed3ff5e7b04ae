-- kloop.eval.rates: the task's cost model seen from the evaluator: the cost at a size for a
-- candidate's parameters, the physical floor against the datasheet peaks, and the
-- achieved rates (and fractions of the ceilings) added to a timed result. The functions
-- in `methods` are Evaluator methods (kloop.eval.evaluator installs them).
local gpu = require("kloop.core.gpu")
local taskmod = require("kloop.eval.task")

local M = {}
local R = {}
M.methods = R

-- Datasheet peaks of a GPU for a unit: {flops = FLOP/s, bytes = B/s} (kloop.core.gpu).
M.peaks = gpu.datasheet_peaks

-- The task's cost model at a size for a candidate's parameters (the default point's
-- where it names none): a cost that depends on a tunable sees it.
function R:cost(size, defines)
  local point = taskmod.default_point(self.task.params)
  for k, v in pairs(defines or {}) do point[k] = v end
  return self.task.cost(taskmod.with_params(size, point))
end

function R:floor_ms(defines)
  local cost = self:cost(self.task.sizes.bench, defines)
  -- no measured CPU peaks yet: the host backend has no floor (docs/SECURITY.md)
  if self:backend() == "host" then return nil, cost, nil end
  local peaks = M.peaks(self.gpu, self.task.unit)
  local t = math.max(cost.flops / peaks.flops, cost.bytes / peaks.bytes)
  -- the clock attribute is the boost clock; keep 10% so a real kernel is never refused
  return 0.9 * t * 1e3, cost, peaks
end

-- Adds achieved rates and the fraction of the ceiling to a timed result.
function R:derive(result, defines)
  if (result.verdict == "ok" or result.verdict == "too_fast") and result.time_ms then
    local floor_ms, cost, peaks = self:floor_ms(defines)
    local sec = result.time_ms * 1e-3
    result.tflops = cost.flops / sec / 1e12
    result.gbps = cost.bytes / sec / 1e9
    if not peaks then return result end
    result.frac_peak = math.max(cost.flops / sec / peaks.flops, cost.bytes / sec / peaks.bytes)
    result.bound = (cost.flops / peaks.flops >= cost.bytes / peaks.bytes) and "compute" or "memory"
    local m = self.measured
    if m then
      result.frac_measured = math.max(cost.flops / sec / m.flops, cost.bytes / sec / m.bytes)
      result.measured_peaks = { tflops = m.flops / 1e12, tbps = m.bytes / 1e12 }
    end
    result.floor_ms = floor_ms
  end
  return result
end

return M
