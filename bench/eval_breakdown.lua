-- bench/eval_breakdown.lua: where an evaluation's time goes, on the GPU. A traced
-- worker (kloop.worker.trace) times every backend call; the candidates are points of
-- kernels/gemm_tiled.lua's space (every 37th of the recorded landscape), compiled in the
-- background as the driver does. Prints the worker's time per backend function and the
-- parent's split (waiting for a compile, waiting for the worker, its own work).
-- TIMELINE=1: the worker records the GPU's activities too (CUPTI: kernels, copies,
-- fills; kloop.worker.trace.idle_split), and the GPU's idle time inside the requests is
-- printed split by the backend call that ran during it, and by the GPU operations on
-- either side of each idle stretch. (The records cost the worker some time of their own.)
-- STAGE=screen or cascade: the cascade's screen alone, or both stages in one request.
-- usage: [TIMELINE=1] [STAGE=full|screen|cascade] kloop bench/eval_breakdown.lua [COUNT] [TIMING_BUDGET] [TASK]
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local sys = require("kloop.core.sys")
local gpu = require("kloop.core.gpu")

local count = tonumber(arg[1]) or 12
local budget = tonumber(arg[2]) or 0.3
local task_path = arg[3] or "kernels/gemm_tiled.lua"
local task = assert(taskmod.load(task_path))
if task.backend ~= "host" and not gpu.probe(0) then print("SKIP: no GPU here") os.exit(77) end

local points = {}
if task_path:match("gemm_tiled") then
  local i = 0
  for line in io.lines("bench/landscapes/gemm_tiled_h200.tsv") do
    if not line:match("^#") then
      i = i + 1
      local bm, bn, bk, tm, tn = line:match("^(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)")
      if i % 37 == 1 and #points < count then points[#points + 1] = { BM = bm, BN = bn, BK = bk, TM = tm, TN = tn } end
    end
  end
end
while #points < count do points[#points + 1] = {} end

local t0 = sys.now()
local timeline = os.getenv("TIMELINE") == "1"
-- STAGE=screen: the cascade's screen alone; STAGE=cascade: screen and full in one request
-- (as tune's cascade runs a candidate within its margin); else the full protocol
local stage = os.getenv("STAGE") or "full"
local ev = eval.new(task, { trace = timeline and "timeline" or true })
assert(ev:start())
local t_start = sys.now() - t0
-- the start's steps, and the set-up's calls (backend and host passes)
local sp = {}
for k, v in pairs(ev.start_parts or {}) do sp[#sp + 1] = string.format("%s %.2f s", k, v) end
table.sort(sp)
print("start: " .. table.concat(sp, ", "))
local st = ev.setup_trace or {}
local snames = {}
for k in pairs(st) do if k ~= "_request" then snames[#snames + 1] = k end end
table.sort(snames, function(a, b) return st[a].s > st[b].s end)
print(string.format("%-22s %8s %10s", "setup", "calls", "seconds"))
for i, k in ipairs(snames) do
  if i <= 14 then print(string.format("%-22s %8d %10.3f", k, st[k].n, st[k].s)) end
end
local cands = {}
for i, p in ipairs(points) do cands[i] = { source = "// variant " .. i .. "\n" .. task.source, defines = p } end
local t1 = sys.now()
ev:precompile(cands)
local t_pre = sys.now() - t1
local acc, wall_total, verdicts, reps_total = {}, 0, {}, 0
local tl = { busy = 0, idle = 0, by_call = {}, by_pair = {}, by_op = {}, gaps = 0, ops = 0, n = 0 }
for _, c in ipairs(cands) do
  local ta = sys.now()
  local opts = { defines = c.defines, timing = { budget = budget } }
  local r
  if stage == "screen" then r = ev:screen(c.source, opts)
  elseif stage == "cascade" then r = ev:cascade(c.source, opts)
  else r = ev:evaluate(c.source, opts) end
  wall_total = wall_total + (sys.now() - ta)
  verdicts[r.verdict] = (verdicts[r.verdict] or 0) + 1
  reps_total = reps_total + (r.reps or 0)
  local w = r.worker_timeline
  if w then
    tl.n, tl.busy, tl.idle, tl.gaps, tl.ops = tl.n + 1, tl.busy + w.busy, tl.idle + w.idle, tl.gaps + w.gaps, tl.ops + w.ops
    for k, v in pairs(w.by_call) do tl.by_call[k] = (tl.by_call[k] or 0) + v end
    for _, f in ipairs({ "by_pair", "by_op" }) do
      for k, v in pairs(w[f] or {}) do
        local p = tl[f][k] or { n = 0, s = 0 }
        p.n, p.s = p.n + v.n, p.s + v.s
        tl[f][k] = p
      end
    end
  end
  for k, e in pairs(r.worker_trace or {}) do
    local a = acc[k] or { n = 0, s = 0 }
    a.n, a.s = a.n + e.n, a.s + e.s
    acc[k] = a
  end
end
ev:close()
local req_total = acc._request and acc._request.s or 0
local names = {}
for k in pairs(acc) do if k ~= "_request" then names[#names + 1] = k end end
table.sort(names, function(a, b) return acc[a].s > acc[b].s end)
print(string.format("%-18s %8s %10s %7s", "worker", "calls", "seconds", "share"))
for _, k in ipairs(names) do
  print(string.format("%-18s %8d %10.3f %6.1f%%", k, acc[k].n, acc[k].s, 100 * acc[k].s / math.max(req_total, 1e-9)))
end
if tl.n > 0 then
  local function top(t, val)
    local ks = {}
    for k in pairs(t) do ks[#ks + 1] = k end
    table.sort(ks, function(a, b) return val(t[a]) > val(t[b]) end)
    return ks
  end
  print(string.format("TIMELINE: %d requests, GPU busy %.3f s, idle %.3f s (%.1f%% idle; %.2f ms idle a request), "
    .. "%d idle stretches, %d GPU operations", tl.n, tl.busy, tl.idle, 100 * tl.idle / math.max(tl.busy + tl.idle, 1e-9),
    1000 * tl.idle / tl.n, tl.gaps, tl.ops))
  print(string.format("%-24s %10s %8s %7s", "idle during", "seconds", "ms/req", "share"))
  for i, k in ipairs(top(tl.by_call, function(v) return v end)) do
    if i <= 14 then print(string.format("%-24s %10.4f %8.3f %6.1f%%", k, tl.by_call[k], 1000 * tl.by_call[k] / tl.n,
      100 * tl.by_call[k] / math.max(tl.idle, 1e-9))) end
  end
  print(string.format("%-32s %7s %9s %8s %8s", "GPU busy with", "count", "seconds", "ms/req", "us each"))
  for i, k in ipairs(top(tl.by_op, function(v) return v.s end)) do
    local p = tl.by_op[k]
    if i <= 12 then print(string.format("%-32s %7d %9.4f %8.3f %8.1f", k:sub(1, 32), p.n, p.s, 1000 * p.s / tl.n, 1e6 * p.s / p.n)) end
  end
  print(string.format("%-64s %7s %9s %8s", "idle between (GPU op before -> after)", "count", "seconds", "us each"))
  for i, k in ipairs(top(tl.by_pair, function(v) return v.s end)) do
    local p = tl.by_pair[k]
    if i <= 16 then print(string.format("%-64s %7d %9.4f %8.1f", k:sub(1, 64), p.n, p.s, 1e6 * p.s / p.n)) end
  end
end
local vs = {}
for k, n in pairs(verdicts) do vs[#vs + 1] = k .. " " .. n end
print(string.format("BREAKDOWN (" .. stage .. "): %d candidates (%s), timing budget %.2f s: start %.1f s, precompile call %.2f s, "
  .. "evaluations %.1f s wall, of it in the worker %.1f s (%.0f%%); %.1f candidates/min; %.1f timed repetitions each",
  #cands, table.concat(vs, ", "), budget, t_start, t_pre, wall_total, req_total, 100 * req_total / wall_total,
  60 * #cands / wall_total, reps_total / #cands))
