-- kloop.eval.evaluator: the parent side of evaluation: compiles candidates, drives a worker
-- process per GPU, survives whatever the candidate does, and returns result tables. The
-- worker and its requests (kloop.eval.worker_client), the cost model and derived rates
-- (kloop.eval.rates) and the sentinel (kloop.eval.sentinel) are Evaluator methods kept
-- in their own files; their constants are re-exported here.
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local taskmod = require("kloop.eval.task")
local plan = require("kloop.eval.plan")
local compile = require("kloop.eval.compile")
local compile_host = require("kloop.eval.compile_host")
local worker_client = require("kloop.eval.worker_client")
local rates = require("kloop.eval.rates")
local sentinel = require("kloop.eval.sentinel")
local stats = require("kloop.eval.stats")

local M = {}

M.peaks = rates.peaks
M.flush_source, M.check_source = worker_client.flush_source, worker_client.check_source
M.worker_env, M.host_worker_env = worker_client.worker_env, worker_client.host_worker_env
M.DEADLINE_FLOOR, M.DEADLINE_FACTOR, M.DEADLINE_FIRST =
  worker_client.DEADLINE_FLOOR, worker_client.DEADLINE_FACTOR, worker_client.DEADLINE_FIRST
M.SENTINEL_EVERY, M.SENTINEL_STREAK, M.SENTINEL_KEEP =
  sentinel.SENTINEL_EVERY, sentinel.SENTINEL_STREAK, sentinel.SENTINEL_KEEP

local Evaluator = {}
Evaluator.__index = Evaluator

-- the methods kept in their own files
for _, part in ipairs({ worker_client, rates, sentinel }) do
  for name, fn in pairs(part.methods) do Evaluator[name] = fn end
end

function M.new(task, opts)
  opts = opts or {}
  local self = setmetatable({ task = task, opts = opts, nsets = opts.nsets or 2, restarts = 0,
    spent = { start = 0, compile = 0, worker = 0 } }, Evaluator)
  local secret = opts.secret
  if not secret then
    local bytes, err = sys.random_bytes(16)
    if not bytes then error("cannot draw the run secret: " .. err, 0) end
    secret = bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end)
  end
  self.secret = secret
  self.log = opts.log or function() end
  return self
end

-- Seeds for case/set/arg drawn from the run secret (below 2^52, so JSON carries them).
function Evaluator:seed(label, s, i)
  local key = self.secret .. "/" .. label .. "/" .. s .. "/" .. i
  local h = sys.hash64(key, 0x6b6c6f6f70ULL)
  return tonumber(h % 0x10000000000000ULL)
end

-- The concrete task the worker sees: numbers only, no Lua functions.
function Evaluator:spec()
  local task = self.task
  -- guard patterns and digests are keyed by the run secret: a candidate cannot know them
  local gkey = self.secret .. "/guards"
  local spec = { args = {}, cases = {}, nsets = self.nsets, tolerance = task.tolerance,
    guard_seed = tonumber(sys.hash64(gkey, 0) % 0x10000000000000ULL),
    reference = { entry = task.reference.entry or task.entry, precision = task.reference.precision or "f32" } }
  for i, a in ipairs(task.args) do
    spec.args[i] = { name = a.name, dtype = a.dtype, pointer = a.pointer, role = a.role, dists = a.dists }
  end
  -- symbols (__constant__ tables) are filled per input set like inputs (docs/TASKS.md)
  spec.symbols = {}
  local counts = taskmod.concrete_symbols(task, task.sizes.bench, taskmod.default_point(task.params))
  for k, sy in ipairs(task.symbols or {}) do
    spec.symbols[k] = { name = sy.name, dtype = sy.dtype, dists = sy.dists, count = counts[k].count }
  end
  local rtask = { launch = task.reference.launch or task.launch, entry = spec.reference.entry, file = task.file }
  -- the reference runs at the point it was compiled at (kloop.task.fill_defaults)
  local point = taskmod.fill_defaults(task, task.reference.baseline and task.source or task.reference.source, nil)
  for ci, case in ipairs(taskmod.cases(task)) do
    local seeds = {}
    for s = 1, self.nsets do
      seeds[s] = {}
      for i = 1, #task.args do seeds[s][i] = self:seed(case.label, s, i) end
      for k = 1, #spec.symbols do seeds[s][#task.args + k] = self:seed(case.label, s, #task.args + k) end
    end
    spec.cases[ci] = { label = case.label, bench = case.bench or false, size = case.size,
      args = taskmod.concrete_args(task, case.size, point), seeds = seeds,
      ref_plan = plan.for_task(rtask, case.size, nil, point) }
  end
  return spec
end

-- Where the evaluator's wall time went (self.spent, seconds): start (the worker's
-- start-up and the task's set-up), compile (compiling, or waiting for a background
-- compile, at evaluation time) and worker (requests that run code). The run's summary
-- shows them (kloop.search.progress).
function Evaluator:spend(what, t0)
  self.spent = self.spent or {}
  self.spent[what] = (self.spent[what] or 0) + (sys.now() - t0)
end

function Evaluator:backend() return self.opts.backend or self.task.backend or "cuda" end

-- The compiler of this evaluator's backend and its options for one candidate.
-- Implicit parameters (kloop.tune.implicit_space) travel among a candidate's defines
-- under kloop_* names; they are not -D defines: kloop_block reshapes the task's launch
-- plan, kloop_maxrreg and kloop_fast_math become compiler options. Returns the plain
-- defines, the extra options and the block shape (or nil).
function M.split_implicit(defines)
  if not defines then return nil, {}, nil end
  local plain, options, block = {}, {}, nil
  for k, v in pairs(defines) do
    if k == "kloop_block" then
      local dims = {}
      for d in tostring(v):gmatch("%d+") do dims[#dims + 1] = tonumber(d) end
      block = dims
    elseif k == "kloop_maxrreg" then
      if tonumber(v) and tonumber(v) > 0 then options[#options + 1] = "--maxrregcount=" .. math.floor(tonumber(v)) end
    elseif k == "kloop_fast_math" then
      if tonumber(v) == 1 then options[#options + 1] = "--use_fast_math" end
    else
      plain[k] = v
    end
  end
  return plain, options, block
end

function Evaluator:compiler(opts, src)
  local defines, extra = M.split_implicit(opts.defines)
  defines = taskmod.fill_defaults(self.task, src or self.task.source, defines)
  -- sizes compiled in (docs/TASKS.md): opts.case's size names join the point's defines
  if opts.case then defines = taskmod.size_defines(self.task, opts.case.size, defines) end
  local options = self.task.options
  if #extra > 0 then
    options = {}
    for _, o in ipairs(self.task.options or {}) do options[#options + 1] = o end
    for _, o in ipairs(extra) do options[#options + 1] = o end
  end
  local copts = { arch = self.arch, dir = self.task.dir, options = options, defines = defines, name = opts.name,
    entries = opts.entries or self:entries() }
  return self:backend() == "host" and compile_host or compile, copts
end

-- The kernel names a candidate's module must resolve (C++ names are lowered through
-- NVRTC's name expressions: kloop.compile): the task's entry and its plan's entries.
function Evaluator:entries()
  if self.entry_list then return self.entry_list end
  local list, seen = {}, {}
  local function add(e) if e and not seen[e] then seen[e] = true list[#list + 1] = e end end
  add(self.task.entry)
  local ok, p = pcall(plan.for_task, self.task, self.task.sizes.bench)
  if ok then for _, k in ipairs(p) do add(k.entry) end end
  self.entry_list = list
  return list
end

-- Replaces the entry names of a case's plan (a list of kernels) by the lowered ones a job found.
local function lower_entries(p, job)
  local low = job and job.lowered or {}
  for _, k in ipairs(next(low) and p or {}) do k.entry = low[k.entry] or k.entry end
end

function Evaluator:compile_source(src, opts)
  local compiler, copts = self:compiler(opts, src)
  return compiler.compile(src, copts)
end

-- The cases a source is compiled for: with sizes compiled in (task.sizes_as_defines),
-- every case, each with its size's defines; otherwise nil (one binary serves them all).
function Evaluator:compile_cases()
  return self.task.sizes_as_defines and taskmod.cases(self.task) or nil
end

local function with_case(opts, case)
  if not case then return opts end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.case = case
  return o
end
M.with_case = with_case

-- "bench (HEIGHT=37 WIDTH=1000)": a case and the sizes compiled into its binary.
function Evaluator:case_text(case)
  local parts = {}
  for _, k in ipairs(self.task.sizes_as_defines or {}) do parts[#parts + 1] = k .. "=" .. tostring(case.size[k]) end
  return case.label .. " (" .. table.concat(parts, " ") .. ")"
end

-- Compiles src for every case it needs: a list of {case, job} in case order (one entry
-- with case = nil without sizes compiled in). CUDA compiles the cases in parallel; a
-- background compile of the same key (precompile) is waited for, a cached one is free.
function Evaluator:compile_all(src, opts)
  local cases = self:compile_cases()
  if not cases then return { { job = self:compile_source(src, opts) } } end
  local out = {}
  if self:backend() == "cuda" then
    local jobs = {}
    for i, case in ipairs(cases) do
      local _, copts = self:compiler(with_case(opts, case), src)
      local job = compile.prepare(src, copts)
      if job then jobs[#jobs + 1], out[i] = job, { case = case, job = job } end
    end
    compile.run(jobs, { parallel = self.opts.compile_parallel })
  end
  for i, case in ipairs(cases) do
    if not (out[i] and out[i].job.done) then out[i] = { case = case, job = self:compile_source(src, with_case(opts, case)) } end
  end
  return out
end

-- One job that stands for the cases' builds in a result (kloop.eval.evaluator annotate):
-- the bench binary's log and resources, the seconds of all, cached when all were.
local function summary_job(built)
  if #built == 1 then return built[1].job end
  local bench = built[#built].job
  local j = { seconds = 0, cached = true, log = bench.log, resources = bench.resources, cubin_path = bench.cubin_path,
    lowered = bench.lowered, ok = true, cases = #built }
  for _, b in ipairs(built) do
    j.seconds = j.seconds + (b.job.seconds or 0)
    j.cached = j.cached and b.job.cached or false
    if b.job.static_data_bytes then j.static_data_bytes = math.max(j.static_data_bytes or 0, b.job.static_data_bytes) end
  end
  return j
end

-- Launch plans per case: the candidate's own (launch comments) or the task's.
function Evaluator:plans(src, defines)
  local plain, _, block = M.split_implicit(defines)
  -- the plan sees the point the source is compiled at, defaults filled in
  plain = taskmod.fill_defaults(self.task, src, plain)
  local own = self:backend() ~= "host" and plan.from_source(src, self.task.entry, plain)
  local out = {}
  for _, case in ipairs(taskmod.cases(self.task)) do
    if own then
      local p, err = own(case.size)
      if not p then return nil, err end
      out[case.label] = p
    else
      out[case.label] = plan.for_task(self.task, case.size, nil, plain)
      if block then
        local p, err = M.reshape(out[case.label], block)
        if not p then return nil, err end
        out[case.label] = p
      end
    end
  end
  return out
end

-- The task's one-kernel plan with another block shape and as many threads along each
-- dimension as before (grid_i = cdiv(grid_i * block_i, new_i)): right for kernels that
-- index by blockIdx * blockDim + threadIdx; verification decides for any other.
function M.reshape(p, block)
  if #p ~= 1 then return nil, "kloop_block reshapes one-kernel plans only" end
  local k = p[1]
  local grid, b = {}, {}
  for i = 1, 3 do
    b[i] = block[i] or 1
    grid[i] = math.ceil(k.grid[i] * k.block[i] / b[i])
  end
  return plan.normalize({ grid = grid, block = b, smem = k.smem, entry = k.entry }, k.entry)
end

-- Compiles a candidate and builds its launch plans: returns the worker request part
-- ({cubin, cubins (sizes compiled in: label -> binary), plans, floor_ms}) and the job,
-- or nil, a result table with the verdict, job. A failure of one size's build names it.
function Evaluator:prepare(src, opts)
  local unguarded = taskmod.unguarded_reason(self.task, src)
  if unguarded then return nil, { verdict = "rejected", reason = unguarded }, {} end
  local tc = sys.now()
  local built = self:compile_all(src, opts)
  self:spend("compile", tc)
  -- (a binary compiled ahead, by precompile or upcoming, is found at once)
  if sys.now() - tc > 0.005 then
    -- what was waited for (kloop.eval.compile's wait_state): a binary foreseen but still
    -- queued or compiling, or one no guess named
    self:count_wait(built[#built].job.wait_state or "compiling", sys.now() - tc, built[#built].job)
  end
  self.prepared = (self.prepared or 0) + 1
  for _, b in ipairs(built) do
    local job = b.job
    local at = b.case and (" at " .. self:case_text(b.case)) or ""
    if job.rejected then return nil, { verdict = "rejected", reason = job.log .. at }, job end
    if job.cache_error then
      -- (the driver stops the run on this one: every candidate would fail the same way;
      -- cache_failed keeps it for the paths that do not return it to the driver: an A/B,
      -- the sentinel's re-evaluation, a profile)
      self.cache_failed = job.cache_error
      return nil, { verdict = "launch_error", infrastructure = true, cache_error = true, reason = job.cache_error }, job
    end
    if not job.ok then
      return nil, { verdict = "compile_error", reason = (job.timeout and "compile deadline exceeded" or "does not compile") .. at,
        log = compile.filter_log(job.log), evidence = b.case and { case = b.case.label } or nil }, job
    end
  end
  local plans, perr = self:plans(src, opts.defines)
  if not plans then return nil, { verdict = "launch_error", reason = "launch plan: " .. perr }, built[#built].job end
  for _, case in ipairs(taskmod.cases(self.task)) do
    local b = built[1]
    for _, x in ipairs(built) do if x.case and x.case.label == case.label then b = x end end
    lower_entries(plans[case.label], b.job)
  end
  local point_args, aerr = self:point_args(src, opts.defines)
  if not point_args then return nil, { verdict = "launch_error", reason = aerr }, built[#built].job end
  for _, b in ipairs(self:backend() == "cuda" and built or {}) do
    -- large static device data is where a kernel would keep results between launches
    local job = b.job
    -- (what the binary is, taken as its compiler ended where this process compiled it:
    -- kloop.eval.compile's facts; else read back from the cache)
    local facts = job.image_facts
    local image = not facts and util.read_file(job.cubin_path)
    self:image_id(job, image or nil)
    local bytes = facts and facts.static_data_bytes or (image and compile.static_data_bytes(image))
    local limit = self.task.static_data or M.STATIC_DATA_LIMIT
    if bytes and bytes > limit then
      return nil, { verdict = "rejected", static_data_bytes = bytes, reason = string.format(
        "the module declares %s of static __device__ data (limit %s): a task that needs it sets static_data = %d in its sidecar",
        string.format("%.2f MiB", bytes / 2^20), string.format("%.2f MiB", limit / 2^20), bytes) }, job
    end
    job.static_data_bytes = bytes
  end
  local cubins
  if built[1].case then
    cubins = {}
    for _, b in ipairs(built) do cubins[b.case.label] = b.job.cubin_path end
  end
  local job = summary_job(built)
  return { cubin = job.cubin_path, cubins = cubins, plans = plans, floor_ms = self:floor_ms(opts.defines),
    args = next(point_args) and point_args or nil }, nil, job, M.code_id(built, plans, point_args, self)
end

-- The loaded image's id of a compiled job's binary (compile.image_id), kept by the
-- job's content key (one key, one binary): read once per binary in a run, not per
-- evaluation. image: the binary's bytes where the caller has read them already.
function Evaluator:image_id(job, image)
  self.image_ids = self.image_ids or {}
  local id = job.key and self.image_ids[job.key]
  if id then return id end
  id = job.image_facts and job.image_facts.id or compile.image_id(image or util.read_file(job.cubin_path or ""))
  if id and job.key then self.image_ids[job.key] = id end
  return id
end

-- What a candidate runs, as an id: the loaded images of its binaries (compile.image_id:
-- not the source's comments or the file's name), its launch plans and the arguments
-- its point changes. Two candidates with one id run the same machine code the same
-- way: an A/B between them can only measure noise (kloop.search.driver never crowns on
-- one). nil when a binary cannot be read. ev: the evaluator whose image ids to reuse.
function M.code_id(built, plans, point_args, ev)
  local parts = {}
  for _, b in ipairs(built) do
    local id = ev and ev:image_id(b.job) or compile.image_id(util.read_file(b.job.cubin_path or ""))
    if not id then return nil end
    parts[#parts + 1] = (b.case and b.case.label or "") .. ":" .. id
  end
  parts[#parts + 1] = util.canonical_json(plans or {})
  parts[#parts + 1] = util.canonical_json(point_args or {})
  return sys.content_hash(table.concat(parts, "\n"))
end

-- What differs at a candidate's point from the worker's arguments (sized at the
-- reference's point, Evaluator:spec): {label -> {i -> {count} or {value}}}, only the
-- scratch counts and scalar values that differ (docs/TASKS.md, "Sizes that depend on the
-- point"), or nil, why. The element type's scalar and the other buffers' counts cannot
-- differ: kloop.eval.task refuses such a task at load, and a point that makes them is
-- refused here.
function Evaluator:point_args(src, defines)
  local task = self.task
  local spec = self.task_spec or self:spec()
  local plain = M.split_implicit(defines)
  local point = taskmod.fill_defaults(task, src, plain)
  local out = {}
  for ci, case in ipairs(taskmod.cases(task)) do
    local ok, args = pcall(taskmod.concrete_args, task, case.size, point)
    if not ok then return nil, "arguments at this point: " .. tostring(type(args) == "table" and args.message or args) end
    local base = spec.cases[ci].args
    for i, a in ipairs(task.args) do
      local d
      if a.pointer and args[i].count ~= base[i].count then
        if a.role ~= "scratch" then
          return nil, string.format(
            "%s has %d elements at this point on %s, %d at the reference's: only a scratch buffer may change size with the point",
            a.name, args[i].count, case.label, base[i].count)
        end
        d = { count = args[i].count }
      elseif a.pointer and args[i].dtype ~= a.dtype then
        return nil, string.format("%s's element type is %s at this point, the worker's is %s", a.name, tostring(args[i].dtype), a.dtype)
      elseif not a.pointer and args[i].value ~= base[i].value then
        d = { value = args[i].value }
      end
      if d then
        out[case.label] = out[case.label] or {}
        out[case.label][tostring(i)] = d
      end
    end
  end
  return out
end

M.STATIC_DATA_LIMIT = 2^20

-- Compiles a batch of candidates in parallel ahead of their evaluation, so the
-- evaluations that follow find their binaries in the cache. cands: {source, defines}.
-- In the background (opts.compile_background, default on): the compilers run while
-- the worker evaluates, and each evaluation waits only for its own binary.
function Evaluator:precompile(cands, urgent)
  if self:backend() == "host" then return end -- cc runs per evaluation
  if not self.ready then
    -- a worker not started yet: its start queues these as soon as its hello has given
    -- the GPU's arch, so they compile beside the reference and during the task's setup
    self.precompile_at_start = cands
    local ok = self:start()
    self.precompile_at_start = nil
    if not ok then return end
  end
  self:queue_compiles(cands, urgent)
end

-- The candidates' compile jobs queued in the background (or compiled now, with
-- opts.compile_background false); urgent: started now, ahead of any queued guesses.
function Evaluator:queue_compiles(cands, urgent)
  local jobs = {}
  for _, c in ipairs(cands) do
    for _, job in ipairs(self:compile_jobs(c)) do jobs[#jobs + 1] = job end
  end
  compile.run(jobs, { parallel = self.opts.compile_parallel, background = self.opts.compile_background ~= false,
    urgent = urgent })
end

-- The compile jobs a candidate ({source, defines}) needs: one, or (sizes compiled in)
-- one per case; a source refused at once has none.
function Evaluator:compile_jobs(c)
  local src, jobs = c.source or self.task.source, {}
  for _, case in ipairs(self:compile_cases() or { false }) do
    local _, copts = self:compiler(with_case(c, case), src)
    jobs[#jobs + 1] = compile.prepare(src, copts)
  end
  return jobs
end

-- Whether every binary a candidate ({source, defines}) needs is compiled already, so
-- its evaluation would not wait for a compiler (the host backend compiles in the worker:
-- always ready).
function Evaluator:compiled(c)
  local _, pending, none = self:compile_counts(c)
  return pending == 0 and none == 0
end

-- Of the binaries a candidate ({source, defines}) needs: how many are ready (cached, or
-- their background job done), pending (queued or compiling in the background) and
-- neither (an evaluation would compile them itself); and, of the ready, how many failed
-- to compile. The host backend: all ready.
function Evaluator:compile_counts(c)
  if self:backend() == "host" then return 1, 0, 0, 0 end
  -- (the driver asks this of every candidate of a batch, the next and the spares at each
  -- step of a wait: the jobs' keys are kept per candidate and arch, weakly, so each is
  -- hashed once, not at every ask; only what the asks read, not a job's log)
  self.count_jobs = self.count_jobs or setmetatable({}, { __mode = "k" })
  local kept = self.count_jobs[c]
  if not kept or kept.arch ~= self.arch or kept.source ~= c.source or kept.defines ~= c.defines then
    kept = { arch = self.arch, source = c.source, defines = c.defines, jobs = {} }
    for i, job in ipairs(self:compile_jobs(c)) do
      kept.jobs[i] = { key = job.key, name_exprs = job.name_exprs, entries = job.entries }
    end
    self.count_jobs[c] = kept
  end
  local ready, pending, none, failed = 0, 0, 0, 0
  for _, k in ipairs(kept.jobs) do
    -- (a throwaway job each ask: a cache hit fills it with the build's log)
    local job = { key = k.key, name_exprs = k.name_exprs, entries = k.entries }
    if compile.ready(job) then
      ready = ready + 1
      if compile.failed(job) then failed = failed + 1 end
    elseif compile.pending(job) then pending = pending + 1
    else none = none + 1 end
  end
  return ready, pending, none, failed
end

-- A compile an evaluation waited for: counted (waited_compiles, waited_by[state] for the
-- time line) and, with KLOOP_WAITS_LOG=FILE (benches), a line appended to FILE: the
-- wait, what it was (label, else state), the job's age and compile seconds, the
-- compilers running and queued.
function Evaluator:count_wait(state, seconds, job, label)
  self.waited_compiles = (self.waited_compiles or 0) + 1
  self.waited_by = self.waited_by or {}
  self.waited_by[state] = (self.waited_by[state] or 0) + 1
  local bg = compile.background
  M.waits_log(string.format("wait %.3f %s age %.3f compile %s urgent %s running %d queued %d prepared %d", seconds,
    label or state, job and job.started and (sys.now() - job.started) or -1, tostring(job and job.seconds),
    tostring(job and job.urgent or false), #bg.running, #bg.queue, self.prepared or 0))
end

-- A line appended to KLOOP_WAITS_LOG (benches), after the time now; nothing without it.
-- (the variable read once: the driver marks every step of its evaluation loop)
local WAITS_LOG = os.getenv("KLOOP_WAITS_LOG")
if WAITS_LOG == "" then WAITS_LOG = nil end
-- (whether it is kept: a caller whose line costs a format checks this first)
M.waits_logging = WAITS_LOG ~= nil
function M.waits_log(text)
  if not WAITS_LOG then return end
  local f = io.open(WAITS_LOG, "a")
  if not f then return end
  f:write(string.format("%.4f %s\n", sys.now(), text))
  f:close()
end

-- Of cands ({source, defines}, in the caller's order of preference), the index of the
-- first whose evaluation would wait for no compiler: its binaries are ready, or none of
-- them is pending in the background (it compiles when evaluated). While every one is
-- still compiling or queued, waits for the first to finish, reading the compilers (the
-- wait counts as compiling, one binary waited for; the strategy's think, when armed,
-- runs at its start, its time counted as think; so does self.idle_job, a function that
-- needs the GPU idle, until it says it ran). more (optional): a function giving
-- further candidates, asked only when all of cands are still compiling, and appended
-- to cands, which the index then counts in. give_up (optional): asked through the wait
-- with the seconds waited; where it says so, the wait ends with nil (the driver's spill:
-- kloop.search.driver Ctx:spill_ok). Ctrl-C ends the wait.
function Evaluator:first_ready(cands, more, give_up)
  if self:backend() == "host" then return 1 end
  local t0, next_ask
  while true do
    for i, c in ipairs(cands) do
      local _, pending = self:compile_counts(c)
      if pending == 0 then
        if t0 then
          self:spend("compile", t0)
          self:count_wait("compiling", sys.now() - t0, nil, "first of " .. #cands)
        end
        return i
      end
    end
    if self:step_think() then
      -- (a sliced think, begun or not: a slice of it, then the binaries looked at again,
      -- so one that is ready runs at once; what it names joins when it is done)
      compile.pump(0)
      sys.check_interrupt()
    elseif more then
      -- (looked for only now, then scanned at once: no evaluation that finds its binary
      -- ready pays for them)
      for _, c in ipairs(more()) do cands[#cands + 1] = c end
      more = nil
    else
      if not t0 then
        -- (the CPU is idle in this wait as well, and what think returns compiles sooner)
        self:fire_think()
        t0 = sys.now()
      end
      -- (and the GPU: a job that needs it idle, asked every IDLE_ASK_S with the seconds
      -- the wait is expected to last still, runs when it says so, its time its own, not
      -- compiling's: kloop.search.driver's library reference)
      if self.idle_job and sys.now() >= (next_ask or 0) then
        local ti = sys.now()
        local ran = self.idle_job(self:wait_left(cands))
        if ran then
          self.idle_job = nil
          t0 = t0 + (sys.now() - ti)
        end
        next_ask = sys.now() + M.IDLE_ASK_S
      end
      if give_up and give_up(sys.now() - t0) then
        self:spend("compile", t0)
        self:count_wait("compiling", sys.now() - t0, nil, "given up of " .. #cands)
        return nil
      end
      -- (past a compile's deadline something is amiss: the evaluation's own wait decides)
      if sys.now() - t0 > compile.default_deadline + 5 then
        self:spend("compile", t0)
        return 1
      end
      compile.pump(M.FIRST_READY_WAIT_MS)
      sys.check_interrupt()
    end
  end
end
M.FIRST_READY_WAIT_MS = 5
M.IDLE_ASK_S = 0.02

-- The seconds a wait for the first of cands to be compiled is expected to last still:
-- the least of theirs, a candidate's the longest of its pending compiles
-- (kloop.eval.compile.expected_left); 0 where one is ready.
function Evaluator:wait_left(cands)
  local least = math.huge
  for _, c in ipairs(cands) do
    if not (self.count_jobs and self.count_jobs[c]) then self:compile_counts(c) end -- (its jobs' keys, kept)
    local kept = self.count_jobs and self.count_jobs[c]
    local longest = 0
    for _, k in ipairs(kept and kept.jobs or {}) do
      local left = compile.expected_left(k.key)
      if left and left > longest then longest = left end
    end
    if longest < least then least = longest end
  end
  return least
end

-- Runs the strategy's think armed for this batch (on_sent, kloop.search.driver
-- arm_think) now, once, where no request of the batch runs it, or the rest of a sliced
-- think that a request began (think_job): to its end, its time counted as think.
-- Nothing when it is not armed or is done.
function Evaluator:fire_think()
  local f, job = self.on_sent, self.think_job
  if not f and not (job and not job.done) then return end
  self.on_sent = nil
  local t0 = sys.now()
  if f then f() else job:finish() end
  self.spent.think = (self.spent.think or 0) + (sys.now() - t0)
end

-- One slice of a sliced think (kloop.search.slice; the driver sets slice_think), begun
-- here where it is armed and no request has begun it: true when a slice ran (its time
-- counted as think), false when there is none to run. For waits outside a request
-- (first_ready): a request's own wait steps it in W:await.
function Evaluator:step_think()
  local job = self:think_slices(true)
  if not job then return false end
  local t0 = sys.now()
  local ok, err = pcall(job.step, job)
  self.spent.think = (self.spent.think or 0) + (sys.now() - t0)
  if not ok then error(err, 0) end
  return true
end

-- Evaluates one candidate source (nil: the task's own kernel). opts: defines, timing.
-- Always returns a result table with a verdict.
function Evaluator:evaluate(src, opts)
  opts = opts or {}
  local result = self:judge("full", src or self.task.source, opts)
  self:watch(src or self.task.source, opts, result)
  return result
end

-- (the seconds the evaluator's own account already names: the worker's start, compiling, the worker)
local function accounted(self) return (self.spent.compile or 0) + (self.spent.worker or 0) + (self.spent.start or 0) end

-- One evaluation at a stage ("full" or "screened"), for evaluate, screen and the
-- sentinel's re-evaluations alike: the request, the derived rates, the stage and the
-- wall time on the result, and the slowest verified bench time kept for deadlines (a
-- screened median is a real bench time too: it may only lengthen them).
-- stage "cascade": both stages in one request (Evaluator:cascade); the reply says which
-- it reached, and a request that got no reply (a crash, a timeout) counts as screened.
function Evaluator:judge(stage, src, opts)
  local t0 = sys.now()
  local before = accounted(self)
  local extra, op = nil, "evaluate"
  if stage == "screened" then extra, op = { screen_case = self:screen_case().label }, "screen"
  elseif stage == "cascade" then
    extra, op = { screen_case = self:screen_case().label, screen_timing = self:timing(opts.screen_timing),
      promote_below = opts.promote_below }, "cascade"
  elseif opts.verify_only then extra = { verify_only = true } end
  local result = self:derive(self:submit(op, src, opts, extra), opts.defines)
  if stage == "cascade" then stage = result.stage == "full" and "full" or "screened" end
  result.stage = stage
  result.wall_seconds = sys.now() - t0
  -- (the evaluator's own host work around the request: plans, binaries read, results)
  self.spent.host = (self.spent.host or 0) + result.wall_seconds - (accounted(self) - before)
  if result.verdict == "ok" and result.time_ms and (not self.work_ref or result.time_ms > self.work_ref.ms) then
    self.work_ref = { ms = result.time_ms }
  end
  return result
end

-- The cascade's first stage (docs/TASKS.md, "Stages"): the check size a screen verifies
-- on (the cheapest by the task's cost model), and how many timed repetitions it takes.
M.SCREEN_REPS = 3

function Evaluator:screen_case()
  if self.screen_cached then return self.screen_cached end
  local best, best_w
  for _, case in ipairs(taskmod.cases(self.task)) do
    if not case.bench then
      local c = self:cost(case.size)
      local w = math.max(c.flops or 0, 0) + math.max(c.bytes or 0, 0)
      if not best or w < best_w then best, best_w = case, w end
    end
  end
  self.screen_cached = best or taskmod.cases(self.task)[1]
  return self.screen_cached
end

-- Screens one candidate source (nil: the task's own kernel): compiled, verified on one
-- check size with one input set, timed opts.reps (3) cold-cache repetitions at the bench
-- size with no CI target. The result has stage = "screened"; it is never a best
-- (kloop.driver promotes a candidate worth it to a full evaluation).
-- A screen's timing: opts.reps (else the evaluator's screen_reps, else SCREEN_REPS)
-- repetitions, no CI target, no budget.
function Evaluator:screen_timing(opts)
  local reps = opts.reps or self.opts.screen_reps or M.SCREEN_REPS
  return { min_reps = reps, max_reps = reps, budget = 0 }
end

function Evaluator:screen(src, opts)
  opts = opts or {}
  local sopts = {}
  for k, v in pairs(opts) do sopts[k] = v end
  sopts.timing = self:screen_timing(opts)
  local result = self:judge("screened", src or self.task.source, sopts)
  self:watch(src or self.task.source, sopts, result)
  return result
end

-- The cascade's two stages in one request (docs/TASKS.md, "Stages"): the screen as
-- Evaluator:screen runs it, then in the same request, when the screen is ok and its
-- median is at most promote_below ms (nil: always), the full protocol without what the
-- screen did already (kloop.worker.protocol cascade). The result is the stage reached:
-- "screened", or "full" with result.screen the screen's summary.
function Evaluator:cascade(src, opts, promote_below)
  opts = opts or {}
  local copts = {}
  for k, v in pairs(opts) do copts[k] = v end
  copts.screen_timing = self:screen_timing(opts)
  copts.promote_below = promote_below
  local result = self:judge("cascade", src or self.task.source, copts)
  self:watch(src or self.task.source, result.stage == "screened" and { defines = opts.defines, name = opts.name,
    timing = copts.screen_timing } or opts, result)
  return result
end

-- Starts the worker if needed, compiles src, sends it as request `op` (with the timing
-- and what `extra` adds) and returns the annotated result: a verdict for any failure on
-- the way, infrastructure = true where kloop itself could not run it.
function Evaluator:submit(op, src, opts, extra)
  local ok, err, kind = self:start()
  if not ok then return { verdict = "launch_error", reason = err, infrastructure = true, cache_error = kind == "cache" or nil } end
  local req, result, job, code_id = self:prepare(src, opts)
  M.waits_log("prepared") -- (benches: bench/request_gaps.py splits the gaps between requests)
  if req then
    req.op = op
    req.timing = self:timing(opts.timing)
    for k, v in pairs(extra or {}) do req[k] = v end
    local reply, failed = self:run_request(req)
    result = reply or failed
    result.code_id = code_id
  end
  return self:annotate(result, job)
end

-- Profiles one source (nil: the task's kernel) with CUPTI on the bench size: kernel
-- activity against the event timer, hardware metrics (opts.metrics: a list, or nil for
-- kloop.profile's defaults), then the roofline summary and hints. opts.time_ms: the
-- evaluation's median when known (else the event timer's); opts.verified: this binary
-- was just verified by this evaluator. Returns a result table; result.profile is the
-- summary (also when the counters are unavailable: profile.no_counters says why).
function Evaluator:profile(src, opts)
  opts = opts or {}
  local prof = require("kloop.eval.profile")
  src = src or self.task.source
  local t0 = sys.now()
  if self:backend() ~= "cuda" then
    return { verdict = "launch_error", reason = "profiling needs the cuda backend (this task is " .. self:backend() .. ")",
      infrastructure = true }
  end
  -- the caller's list, else the defaults plus what the task asks for
  local spec = opts.metrics
  if spec == nil and self.task.metrics then spec = "+" .. table.concat(self.task.metrics, ",") end
  local names, merr = prof.metric_list(spec)
  if not names then return { verdict = "launch_error", reason = merr, infrastructure = true, usage = true } end
  local result = self:submit("profile", src, opts, {
    metrics = (self.no_counters and not opts.retry_counters) and {} or names,
    reps = opts.reps or 3, verified = opts.verified or nil })
  if result.verdict == "ok" then
    if result.metrics_error and result.metrics_error:match("^unknown metric") then
      result.infrastructure, result.usage = true, true
      result.reason = result.metrics_error
      result.verdict = "launch_error"
      return result
    end
    local per = result.per_kernel or {}
    local _, cost, peaks = self:floor_ms(opts.defines)
    -- the measured ceilings are an FP32 FMA rate and a copy bandwidth: the FLOP ceiling
    -- of other units stays the datasheet's
    local source = "datasheet"
    if self.measured then
      if (self.task.unit or "fp32") == "fp32" then
        peaks, source = self.measured, "measured"
      else
        peaks, source = { flops = peaks.flops, bytes = self.measured.bytes }, "datasheet FLOP/s, measured bandwidth"
      end
    end
    local s = prof.summarize({ metrics = #per > 0 and prof.aggregate(names, per) or nil, kernels = per,
      dropped_ranges = result.dropped_ranges,
      launches = result.launches, activity = result.activity, passes = result.passes, resources = result.resources,
      time_ms = opts.time_ms, cost = cost, peaks = peaks, peaks_source = source, arch = self.arch })
    s.metric_names = names
    s.chip = result.chip
    s.kernels = per
    s.activity_kernels = result.activity_kernels
    s.activity_error = result.activity_error
    if result.metrics_error then
      s.no_counters = result.metrics_error
      if result.no_counters then self.no_counters = s.no_counters end
    elseif self.no_counters and not opts.retry_counters then
      s.no_counters = self.no_counters
    end
    s.warning = result.profile_warning or s.warning
    s.replay, s.passes_run, s.user_replay_error = result.replay, result.passes_run, result.user_replay_error
    result.profile = s
  end
  result.wall_seconds = sys.now() - t0
  return result
end

-- Evaluates a source, then profiles it if it is verified (one binary, verified once).
-- Returns the evaluation result and the profile run's result (nil when not profiled);
-- on success the evaluation carries the summary as `profile`.
function Evaluator:evaluate_and_profile(src, opts)
  opts = opts or {}
  local r = self:evaluate(src, opts)
  if r.verdict ~= "ok" then return r, nil end
  local popts = { time_ms = r.time_ms, verified = true }
  for k, v in pairs(opts) do if popts[k] == nil then popts[k] = v end end
  local p = self:profile(src, popts)
  if p.verdict == "ok" then r.profile = p.profile end
  return r, p
end

-- A/B comparison of two sources (nil: the task's kernel), timed interleaved in ABBA
-- blocks after a warm-up launch each (kloop.worker.protocol), at least
-- stats.PAIRED_MIN_REPS repetitions each. opts: defines_a, defines_b, timing.
-- Returns {a = result, b = result, ratio = time_a / time_b (the median of the blocks'
-- paired ratios), ratio_ci = {lo, hi} (95%, the sign test's), blocks, order}.
function Evaluator:compare(src_a, src_b, opts)
  opts = opts or {}
  local ok, err = self:start()
  if not ok then return { a = { verdict = "launch_error", reason = err }, b = { verdict = "launch_error", reason = err } } end
  local ext = self:backend() == "host" and ".c" or ".cu"
  local ra, fa, ja = self:prepare(src_a or self.task.source, { defines = opts.defines_a, name = "a" .. ext })
  local rb, fb, jb = self:prepare(src_b or self.task.source, { defines = opts.defines_b, name = "b" .. ext })
  if not (ra and rb) then
    return { a = self:annotate(fa or { verdict = "not_run", reason = "the other candidate failed" }, ja),
             b = self:annotate(fb or { verdict = "not_run", reason = "the other candidate failed" }, jb) }
  end
  -- the worker takes at least this many; the deadline must know it
  local timing = self:timing(opts.timing)
  timing.min_reps = math.max(timing.min_reps or 5, stats.PAIRED_MIN_REPS)
  local reply, failed = self:run_request({ op = "compare", a = ra, b = rb, timing = timing })
  if not reply then return { a = failed, b = failed } end
  reply.a = self:annotate(self:derive(reply.a, opts.defines_a), ja)
  reply.b = self:annotate(self:derive(reply.b, opts.defines_b), jb)
  return reply
end

function Evaluator:timing(t)
  local out = {}
  for k, v in pairs(self.opts.timing or {}) do out[k] = v end
  for k, v in pairs(t or {}) do out[k] = v end
  if out.flush == nil then out.flush = self.task.flush_cache end
  return out
end

function Evaluator:annotate(result, job)
  job = job or {}
  result.compile_seconds = job.seconds
  result.compile_cached = job.cached
  result.compile_log = job.log and compile.filter_log(job.log) or nil
  local res = job.resources or {}
  result.resources = result.resources or {}
  for entry, r in pairs(res) do
    result.resources[entry] = result.resources[entry] or {}
    for k, v in pairs(r) do
      if result.resources[entry][k] == nil then result.resources[entry][k] = v end
    end
  end
  result.arch = self.arch
  result.gpu = self.gpu and self.gpu.name
  result.sandbox = self.gpu and self.gpu.sandbox
  return result
end

return M