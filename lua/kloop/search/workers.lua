-- kloop.search.workers: the driver's side of several workers (docs/SCALE.md): which
-- evaluators a run gets from --workers, --gpus and --remote-workers, and a batch
-- evaluated on them (kloop.search.pool) and settled in the order it was proposed.
local pool = require("kloop.search.pool")
local sys = require("kloop.core.sys")

local M = {}

local function split(s)
  local out = {}
  for part in (s or ""):gmatch("[^,]+") do
    part = part:gsub("^%s+", ""):gsub("%s+$", "")
    if part ~= "" then out[#out + 1] = part end
  end
  return out
end

-- The GPUs --gpus names: a list of device numbers, or nil, why.
function M.devices(spec, count)
  if spec == "all" then
    local out = {}
    for d = 0, math.max(count or 1, 1) - 1 do out[#out + 1] = d end
    return out
  end
  local out, seen = {}, {}
  for _, p in ipairs(split(spec)) do
    local d = tonumber(p)
    if not d or d < 0 or d ~= math.floor(d) then
      return nil, string.format("--gpus %s: '%s' is not a device number (give all, or 0,1,...)", spec, p)
    end
    if count and d >= count then
      return nil, string.format("--gpus %s: this machine has %d GPU%s (0..%d)", spec, count, count == 1 and "" or "s",
        count - 1)
    end
    if seen[d] then return nil, string.format("--gpus %s: GPU %d named twice", spec, d) end
    seen[d] = true
    out[#out + 1] = d
  end
  if #out == 0 then return nil, "--gpus: give all, or device numbers 0,1,..." end
  return out
end

-- Builds ctx.pool when the options ask for more than one worker (ctx.ev, the driver's
-- own evaluator, is the first). Returns true, or nil, a usage error.
function M.build(ctx, eval)
  local opts, task = ctx.opts, ctx.task
  local remote = split(opts.remote_workers)
  local devices
  if opts.gpus ~= "" then
    if task.backend ~= "cuda" then return nil, "--gpus is for GPU tasks; a CPU task takes --workers N" end
    local why
    devices, why = M.devices(opts.gpus, ctx.gpu and ctx.gpu.device_count)
    if not devices then return nil, why end
  end
  if opts.workers > 1 and task.backend == "cuda" then
    return nil, string.format("--workers %d: a GPU task gets one worker per GPU (two on one GPU would time each "
      .. "other's kernels); use --gpus all or --gpus 0,1,...", opts.workers)
  end
  local count = devices and #devices or opts.workers
  -- the driver's probe (device 0) names the arch of device 0 alone: another device or a
  -- remote rank compiles for its own hello's
  local function hint_for(o) if (o.device or 0) ~= 0 or o.worker_argv then o.gpu_hint = nil end end
  if count + #remote <= 1 then
    if devices then ctx.ev.opts.device = devices[1] end
    hint_for(ctx.ev.opts)
    return true
  end
  if opts.cascade == "on" then
    return nil, "--cascade on with more than one worker is not supported yet (which screens are promoted would "
      .. "depend on the order evaluations finish); use one worker, or --cascade off"
  end
  local base = ctx.ev.opts
  local function with(extra)
    local o = {}
    for k, v in pairs(base) do o[k] = v end
    for k, v in pairs(extra) do o[k] = v end
    -- (the baseline runs on the first worker only: no other compiles it ahead, which on
    -- another arch would be for nothing)
    o.precompile_baseline = nil
    return o
  end
  if devices then base.device = devices[1] end
  local evs = { ctx.ev }
  for k = 2, count do evs[k] = eval.new(task, with({ device = devices and devices[k] or nil })) end
  for _, sock in ipairs(remote) do
    -- (a rank shows each of its workers one GPU, as device 0: docs/SCALE.md)
    evs[#evs + 1] = eval.new(task, with({ device = 0, worker_argv = { sys.exe_path() or "kloop", "--worker-remote", sock,
      task.backend } }))
  end
  for _, e in ipairs(evs) do hint_for(e.opts) end
  ctx.pool = pool.new(evs)
  return true
end

-- Evaluates a proposed batch on the pool: the candidates not evaluated before (and no
-- more than the budget has room for), each stored as proposed when it starts; then, in
-- the batch's order, each result settled (the best, the store, the progress line) and
-- given to the strategy, as with one worker. Returns ok, msg like the driver's steps.
function M.evaluate_batch(ctx, cands, strategy, protected)
  local driver = require("kloop.search.driver")
  local list = ctx:fresh_batch(cands)
  for _, cand in ipairs(list) do ctx.done_keys[driver.key(cand)] = true end
  local prop = ctx.proposer
  local ok, res = protected("evaluate", function()
    return ctx.pool:run(list, function(cand, ev) return ctx:run_stages(cand, ev) end, {
      start = function(cand) if ctx.store then ctx.store:propose(ctx, cand) end end,
      stop = function() return ctx:budget_spent() ~= nil and ctx:budget_spent() ~= "candidates" end,
      pump = prop and prop.pump and function() prop:pump() end,
    })
  end)
  if not ok then return false, res end
  -- (the pool starts candidates in order: the results are a prefix of the list)
  return ctx:settle_batch(list, res, strategy, protected)
end

-- The summary's line about the workers (nil with one).
function M.summary(ctx)
  local p = ctx.pool
  if not p then return nil end
  local parts = { string.format("workers: %d", p:size()) }
  if p.retried > 0 then parts[#parts + 1] = string.format("%d evaluation%s retried on another worker", p.retried,
    p.retried == 1 and "" or "s") end
  for _, l in ipairs(p.left_out) do
    parts[#parts + 1] = string.format("worker %d left out (%s)", l.index, l.reason)
  end
  return table.concat(parts, "; ")
end

return M
