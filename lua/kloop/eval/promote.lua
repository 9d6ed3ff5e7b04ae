-- kloop.eval.promote: the staged path of a stored candidate, verified -> canary ->
-- promoted (docs/PROMOTION.md): a fresh worker and secret, hidden sizes, more input
-- distributions, the property check, the sanitizers, and an interleaved A/B re-time
-- against the task's incumbent. Every step is recorded in the store as it ends, with
-- its evidence; the first failed step refuses and the rest are "not reached".
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local taskmod = require("kloop.eval.task")
local hidden = require("kloop.eval.hidden_sizes")
local sanitize = require("kloop.eval.sanitize")

local M = {}

M.STEPS = { "fresh_worker", "hidden_sizes", "distributions", "property_check", "sanitizer", "ab_timing" }
-- the smallest speedup a promotion accepts as proven: the A/B's CI must lie above 1 + this
M.MIN_GAIN = 0.01

local FLOAT = { f32 = true, f64 = true, f16 = true, bf16 = true }

local function fresh_secret()
  local bytes, err = sys.random_bytes(16)
  if not bytes then error("cannot draw the promotion secret: " .. err, 0) end
  return (bytes:gsub(".", function(ch) return string.format("%02x", ch:byte()) end))
end

-- The promotion's input distributions for one float argument: large magnitudes, mixed
-- signs around zero and values near zero, scaled to the task's own range and kept
-- inside what a 16-bit float holds. Returns a list of {name, dist}.
function M.extra_dists(arg)
  local m = 0
  for _, d in ipairs(arg.dists or {}) do
    if d.kind == "uniform" then m = math.max(m, math.abs(d.a), math.abs(d.b))
    elseif d.kind == "normal" then m = math.max(m, math.abs(d.a) + 2 * d.b)
    elseif d.kind == "const" then m = math.max(m, math.abs(d.a)) end
  end
  if m == 0 then m = 1 end
  local narrow = arg.dtype == "f16" or arg.dtype == "bf16"
  local large = narrow and math.min(64 * m, 256) or 1e4 * m
  local tiny = narrow and 1e-3 or 1e-6 * m
  return {
    { name = "large magnitudes", dist = { kind = "uniform", a = -large, b = large } },
    { name = "mixed signs", dist = { kind = "normal", a = 0, b = m } },
    { name = "near zero", dist = { kind = "uniform", a = -tiny, b = tiny } },
  }
end

-- A copy of the task whose float inputs also see the promotion distributions (which:
-- nil = all three, else a list of their names). Returns the task, the set count and the
-- names of the distributions added (nil when the task has no float input) and how many
-- of the first float input's sets are the task's own.
function M.with_dists(task, which)
  local t = {}
  for k, v in pairs(task) do t[k] = v end
  t.args = {}
  local nsets, names, own = 2, nil, nil
  for i, a in ipairs(task.args) do
    local c = {}
    for k, v in pairs(a) do c[k] = v end
    if a.pointer and a.role ~= "output" and FLOAT[a.dtype] and a.dists then
      c.dists = {}
      for j, d in ipairs(a.dists) do c.dists[j] = d end
      own = own or #a.dists
      names = {}
      for _, x in ipairs(M.extra_dists(a)) do
        local want = which == nil
        for _, w in ipairs(which or {}) do if w == x.name then want = true end end
        if want then
          c.dists[#c.dists + 1] = x.dist
          names[#names + 1] = x.name
        end
      end
      nsets = math.max(nsets, #c.dists)
    end
    t.args[i] = c
  end
  return t, nsets, names, own
end

local function is_setup_failure(r)
  return r.infrastructure and tostring(r.reason):find("task setup failed", 1, true) ~= nil
end

-- The size a failed verdict names: its evidence's size, else the case's by label.
local function failing_size(r, list)
  local e = type(r.evidence) == "table" and r.evidence or {}
  if type(e.size) == "table" then return e.size end
  local label = e.case or tostring(r.reason):match("(check%d+)")
  if label == "bench" or (r.reason or ""):match("^bench") then return list[#list] end
  local i = label and tonumber(label:match("%d+"))
  return i and list[i] or nil
end

---------------------------------------------------------------------------
-- The steps. Each gets the promotion context and returns {status, reason, evidence,
-- infrastructure}: infrastructure = true when kloop, not the candidate, failed.

local Steps = {}
M.Steps = Steps -- (each step of a promotion, for the specs)

function Steps.fresh_worker(p)
  local r = sanitize.verify_only(p.ev, p.cand)
  local e = { verdict = r.verdict, reason = r.reason, gpu = r.gpu,
    sandbox = r.sandbox, sizes = #taskmod.cases(p.task), input_sets = p.ev.nsets }
  if r.verdict ~= "ok" then
    return { status = "failed", infrastructure = r.infrastructure, evidence = e,
      reason = "a fresh worker with a new secret: " .. r.verdict .. ": " .. tostring(r.reason) }
  end
  return { status = "passed", evidence = e, reason = string.format("verified again on %d sizes x %d input sets"
    .. " with new inputs and guard patterns", e.sizes, e.input_sets) }
end

-- An evaluator of task with the options eo, the promotion's evaluator_opts filling in
-- what eo leaves unset.
local function new_evaluator(p, task, eo)
  for k, v in pairs(p.evaluator_opts) do if eo[k] == nil then eo[k] = v end end
  return require("kloop.eval.evaluator").new(task, eo)
end

-- Verifies on `list` (sizes) in one worker; where the task's own setup fails there (the
-- reference, memory), each size alone, leaving out the ones it cannot set up.
local function verify_sizes(p, task, list, secret, nsets)
  local function one(sizes_list, label)
    local e = new_evaluator(p, sanitize.task_with_sizes(task, sizes_list),
      { secret = secret .. "/" .. label, nsets = nsets, measure_peaks = false })
    local r = sanitize.verify_only(e, p.cand)
    e:close()
    return r
  end
  local r = one(list, "all")
  if not is_setup_failure(r) then return r, {} end
  local left_out = {}
  for i, s in ipairs(list) do
    local ri = one({ s }, tostring(i))
    if is_setup_failure(ri) then
      left_out[#left_out + 1] = { size = s, reason = ri.reason }
    elseif ri.verdict ~= "ok" then
      if type(ri.evidence) ~= "table" then ri.evidence = {} end
      ri.evidence.size = s
      return ri, left_out
    end
  end
  if #left_out == #list then return r, left_out end
  return { verdict = "ok", reason = "verified size by size" }, left_out
end

function Steps.hidden_sizes(p)
  local list, notes = hidden.generate(p.task, p.secret)
  local tried = {}
  for i, h in ipairs(list) do tried[i] = { size = h.size, why = h.why } end
  p.hidden_tried = tried
  local e = { tried = tried, notes = notes }
  if #list == 0 then return { status = "skipped", reason = "no hidden size fits the task's bounds", evidence = e } end
  local sizes_list = {}
  for i, h in ipairs(list) do sizes_list[i] = h.size end
  local r, left_out = verify_sizes(p, p.task, sizes_list, p.secret .. "/hidden", nil)
  e.left_out = #left_out > 0 and left_out or nil
  e.verdict, e.reason = r.verdict, r.reason
  if r.verdict ~= "ok" then
    local size = failing_size(r, sizes_list)
    local named = size and hidden.describe(size) or "a hidden size"
    for _, h in ipairs(list) do if size and hidden.describe(h.size) == named then e.failed = { size = size, why = h.why } end end
    return { status = "failed", infrastructure = r.infrastructure and not size, evidence = e,
      reason = string.format("%s %s: %s", named, r.verdict, tostring(r.reason)) }
  end
  return { status = "passed", evidence = e, reason = string.format("right on %d hidden sizes%s", #list - #left_out,
    #left_out > 0 and string.format(" (%d the task could not set up)", #left_out) or "") }
end

function Steps.distributions(p)
  local t, nsets, names, own = M.with_dists(p.task)
  if not names then
    return { status = "skipped", reason = "the task has no float input: its own distributions were used above",
      evidence = {} }
  end
  local e = { distributions = names, sizes = p.task.sizes.check, input_sets = nsets }
  local r = verify_sizes(p, t, p.task.sizes.check, p.secret .. "/dists", nsets)
  if is_setup_failure(r) then
    -- the reference cannot take them all: each distribution alone, leaving out the
    -- ones the reference itself fails on
    e.not_applicable = {}
    local kept = {}
    for _, name in ipairs(names) do
      local t1, n1 = M.with_dists(p.task, { name })
      local r1 = verify_sizes(p, t1, p.task.sizes.check, p.secret .. "/dist/" .. name, n1)
      if is_setup_failure(r1) then
        e.not_applicable[#e.not_applicable + 1] = { distribution = name, reason = r1.reason }
      elseif r1.verdict ~= "ok" then
        r = r1
        r.distribution = name
        break
      else
        kept[#kept + 1] = name
      end
    end
    if r.verdict ~= "ok" and not r.distribution and #kept == 0 then
      return { status = "skipped", evidence = e, reason = "the task's reference fails on every added distribution" }
    end
    if not r.distribution then r = { verdict = "ok" } end
    e.distributions = kept
  end
  e.verdict, e.reason = r.verdict, r.reason
  if r.verdict ~= "ok" then
    local set = type(r.evidence) == "table" and r.evidence.set
    local dname = r.distribution or (set and (set > own and names[set - own] or "the task's own distribution"))
      or "one of the distributions"
    e.failed = dname
    return { status = "failed", infrastructure = r.infrastructure, evidence = e,
      reason = string.format("%s: %s: %s", dname, r.verdict, tostring(r.reason)) }
  end
  return { status = "passed", evidence = e, reason = "right on " .. table.concat(e.distributions, ", ") }
end

-- The task's check function runs inside every verification (the worker, after the
-- comparison): by now it held on what the hidden sizes and distributions steps ran.
function Steps.property_check(p)
  if p.task.check == nil then
    return { status = "skipped", reason = "the task gives no property check", evidence = {} }
  end
  local ran = {}
  for _, s in ipairs(p.steps or {}) do
    if (s.step == "hidden_sizes" or s.step == "distributions") and s.status == "passed" then ran[#ran + 1] = s.step end
  end
  if #ran == 0 then
    return { status = "skipped", evidence = {},
      reason = "the task's check ran on no hidden size or distribution (both steps were skipped)" }
  end
  local what = #ran == 2 and "every hidden size and input distribution"
    or (ran[1] == "hidden_sizes" and "every hidden size" or "every input distribution")
  return { status = "passed", evidence = { steps = ran }, reason = "the task's check held on " .. what }
end

function Steps.sanitizer(p)
  return sanitize.run(p.task, p.cand, { secret = p.secret, evaluator_opts = p.evaluator_opts, log = p.sublog })
end

function Steps.ab_timing(p)
  local inc = p.incumbent
  local cmp = p.ev:compare(inc.source, p.cand.source, { defines_a = inc.defines, defines_b = p.cand.defines,
    timing = p.timing })
  local a, b = cmp.a or {}, cmp.b or {}
  local e = { incumbent = inc.label, incumbent_id = inc.id, size = p.task.sizes.bench,
    incumbent_ms = a.time_ms, candidate_ms = b.time_ms, reps = b.reps }
  if b.verdict ~= "ok" then
    return { status = "failed", infrastructure = b.infrastructure, evidence = e,
      reason = "the candidate in the A/B run: " .. tostring(b.verdict) .. ": " .. tostring(b.reason) }
  end
  if a.verdict ~= "ok" or not cmp.ratio then
    return { status = "failed", infrastructure = true, evidence = e,
      reason = "the incumbent " .. inc.label .. " in the A/B run: " .. tostring(a.verdict) .. ": " .. tostring(a.reason) }
  end
  p.ratio, p.ratio_ci = cmp.ratio, cmp.ratio_ci
  e.ratio, e.ratio_ci = cmp.ratio, cmp.ratio_ci
  local text = M.ratio_text(cmp.ratio, cmp.ratio_ci)
  local lo, hi = cmp.ratio_ci[1], cmp.ratio_ci[2]
  -- proven faster by more than M.MIN_GAIN: a 95% CI leaves 1 now and then for the same
  -- kernel (a CI clears 1 in about 2.5% of A/Bs of identical code, more on a loaded
  -- machine: promote_spec saw one on CI), never by a clear margin
  if lo > 1 + M.MIN_GAIN then
    return { status = "passed", evidence = e, reason = text .. " vs " .. inc.label .. " at the bench size" }
  end
  if p.allow_equal and hi >= 1 then
    e.allow_equal = true
    return { status = "passed", evidence = e, reason = text .. " vs " .. inc.label .. ": no proven speedup, allowed (--allow-equal)" }
  end
  return { status = "failed", evidence = e, reason = "not faster than the incumbent " .. inc.label .. ": ratio " .. text }
end

-- "1.23x [1.20, 1.26]"
function M.ratio_text(r, ci)
  if type(r) ~= "number" then return "-" end
  ci = ci or {}
  return string.format("%.2fx [%.2f, %.2f]", r, ci[1] or 0 / 0, ci[2] or 0 / 0)
end

---------------------------------------------------------------------------

-- The incumbent of a promotion: opts.against, else the task's last promoted candidate,
-- else the run's baseline, else the task's own kernel. {id, source, defines, label}.
local function incumbent(db, c, run, task, against)
  local id = against
  if not id and run.task_name then id = db:last_promoted(run.task_name, c.id) end
  if not id then
    local rows = assert(db:query("SELECT id FROM candidates WHERE run_id = ? AND proposer = 'baseline' ORDER BY id DESC LIMIT 1",
      c.run_id))
    id = rows[1] and rows[1].id
  end
  if id then
    local inc, err = db:candidate(id)
    if not inc then return nil, "the incumbent: " .. err end
    return { id = inc.id, source = inc.source, defines = inc.params, label = "c:" .. inc.id }
  end
  return { source = task.source, label = "the task's kernel" }
end

-- Runs a promotion of candidate_id. opts: task (else loaded from the run's task_path),
-- evaluator_opts, quiet, log (a function of one line; default print), against (a
-- candidate id), allow_equal, timing (the A/B timing options). Returns {state, reason,
-- ratio, ratio_ci, steps, promotion_id, seconds}, or nil, msg when it cannot start.
function M.run(db, candidate_id, opts)
  opts = opts or {}
  local c, err = db:candidate(candidate_id)
  if not c then return nil, err end
  local run = assert(db:run(c.run_id))
  local task = opts.task
  if not task then
    if not run.task_path then return nil, "run " .. c.run_id .. " has no task path" end
    task, err = taskmod.load(run.task_path)
    if not task then return nil, "the task of run " .. c.run_id .. " does not load: " .. err end
  end
  local inc
  inc, err = incumbent(db, c, run, task, opts.against)
  if not inc then return nil, err end
  local log = opts.log or (opts.quiet and function() end) or print
  local secret = fresh_secret()
  local p = { task = task, cand = { source = c.source, defines = c.params, id = c.id }, incumbent = inc,
    secret = secret, secret_hash = sys.content_hash(secret), evaluator_opts = opts.evaluator_opts or {},
    allow_equal = opts.allow_equal, timing = opts.timing, sublog = log }
  p.ev = new_evaluator(p, task, { secret = secret })
  local pid
  pid, err = db:begin_promotion({ candidate_id = c.id, incumbent_id = inc.id, secret_hash = p.secret_hash,
    kloop_version = require("kloop.core.ffi").version() })
  if not pid then p.ev:close() return nil, "the store refused the promotion: " .. tostring(err) end
  local t0 = sys.now()
  log(string.format("promotion %d of c:%d (task %s) against %s", pid, c.id, task.name, inc.label))
  local steps, state, reason = {}, nil, nil
  p.steps = steps
  local ok, perr = xpcall(function()
    for i, name in ipairs(M.STEPS) do
      local s
      local ts = sys.now()
      if state then
        s = { status = "skipped", reason = "not reached", evidence = {} }
      else
        s = Steps[name](p)
      end
      s.seconds, s.step, s.position = sys.now() - ts, name, i
      steps[i] = s
      assert(db:add_promotion_step(pid, s))
      log(string.format("  %-15s %-8s %s", name, s.status, s.reason or ""))
      if s.status == "failed" and not state then
        state = s.infrastructure and "failed" or "refused"
        reason = string.format("%s at %s: %s", state, name, s.reason)
      end
    end
  end, debug.traceback)
  p.ev:close()
  if not ok then
    local interrupted = sys.is_interrupt(perr)
    state, reason = "failed", interrupted and "interrupted" or ("kloop error: " .. tostring(perr))
  end
  state = state or "promoted"
  if state == "promoted" then
    reason = string.format("promoted %s vs %s", M.ratio_text(p.ratio, p.ratio_ci), inc.label)
  end
  local sani = steps[5] or {}
  local result = { state = state, reason = reason, ratio = p.ratio, ratio_ci = p.ratio_ci, steps = steps,
    promotion_id = pid, seconds = sys.now() - t0, incumbent = inc.label, incumbent_id = inc.id,
    candidate_id = c.id }
  local evidence = { incumbent = inc.label, hidden_sizes = p.hidden_tried,
    sanitizer = sani.status and (sani.status .. ": " .. tostring(sani.reason)) or nil }
  local eok, eerr = db:end_promotion(pid, { state = state, reason = reason, ratio = p.ratio, ratio_ci = p.ratio_ci,
    gpu = p.ev.gpu and p.ev.gpu.name, seconds = result.seconds, evidence = evidence })
  if not eok then result.store_error = eerr end
  log(string.format("%s (%.1f s)", reason, result.seconds))
  if not ok and sys.is_interrupt(perr) then error(perr, 0) end
  return result
end

M.describe_size = hidden.describe
M.steps = Steps
M.fmt_seconds = function(s) return util.fmt_ms(s * 1e3) end

return M
