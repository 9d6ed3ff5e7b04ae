-- tests/spec/support/batch_fixture.lua: what the specs of one worker's batches share
-- (fill_spec, provisional_spec): candidates by source, a protected call, and an
-- evaluator double whose binaries are ready in a given order (first_ready takes the
-- first of `finish` that is in its list, with what `more` adds).
local M = {}

M.OK = function(ms) return { verdict = "ok", time_ms = ms, stage = "full" } end

function M.cands(...)
  local out = {}
  for _, s in ipairs({ ... }) do out[#out + 1] = { source = s, proposer = "tune" } end
  return out
end

function M.protected(_, fn, ...) return pcall(fn, ...) end

-- finish: the sources in the order their binaries are ready; compiling: the sources not
-- compiled when the batch starts (every other one is); on_evaluate(src), optional: run
-- before each evaluation (a spec's kill).
function M.fake_ev(finish, compiling, on_evaluate)
  local ev = { calls = {} }
  function ev:backend() return "cuda" end
  ev.arch = "sm_90"
  function ev:compiled(c) return not compiling[c.source] end
  -- (ev.failed, set by a spec: sources whose compile ended failed)
  function ev:compile_counts(c)
    if self.failed and self.failed[c.source] then return 1, 0, 0, 1 end
    if self:compiled(c) then return 1, 0, 0, 0 end
    return 0, 1, 0, 0
  end
  function ev:queue_compiles() end
  function ev:fire_think() local f = self.on_sent self.on_sent = nil if f then f() end end
  function ev:evaluate(src)
    self.calls[#self.calls + 1] = src
    if on_evaluate then on_evaluate(src) end
    return M.OK(#src + 1)
  end
  function ev:compare(a, b)
    local ta, tb = #a + 1, #b + 1
    return { a = M.OK(ta), b = M.OK(tb), ratio = ta / tb, ratio_ci = { ta / tb, ta / tb }, blocks = 6, order = "ABBA" }
  end
  ev.first_ready = M.first_ready_in(finish)
  return ev
end

-- An evaluator's first_ready that takes the first of `finish` (sources, in the order
-- their binaries are ready) that is in its list, once each; as the evaluator, the
-- candidates `more` gives join the list. A "!wait" entry first in `finish` is a wait of
-- a second, where the wait's give_up is asked: it ends the wait (nil, the entry used)
-- where give_up says so, else the entry is dropped and the list looked at again.
function M.first_ready_in(finish)
  return function(_, list, more, give_up)
    for _, c in ipairs(more and more() or {}) do list[#list + 1] = c end
    while finish[1] == "!wait" do
      table.remove(finish, 1)
      if give_up and give_up(1.0) then return nil end
    end
    for fi, f in ipairs(finish) do
      for j, c in ipairs(list) do if c.source == f then table.remove(finish, fi) return j end end
    end
    return 1
  end
end

-- The driver's options a batch needs, with opts over them.
function M.opts(opts)
  local o = { quiet = true, profile = "none", timing_budget = 0.1, cascade = "off", budget = 100, time = 0,
    tokens = 0, money = 0 }
  for k, v in pairs(opts or {}) do o[k] = v end
  return o
end

return M
