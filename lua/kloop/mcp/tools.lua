-- kloop.mcp.tools: kloop's primitives over one task as tools (definitions with JSON
-- Schemas, handlers over an evaluator and the run store), independent of any transport:
-- `kloop mcp` serves them over stdio, and a strategy can call them directly. Every
-- candidate a call judges is recorded in one run of the store (strategy "mcp") with
-- proposer agent:<client name> and the client's name and version as its provenance.
-- With a host (a strategy run: strategies/agent.lua) the host judges instead: its
-- driver evaluates, verifies and stores each candidate in the strategy's run, and
-- history and best are the host's; this module then writes nothing itself.
local kloop = require("kloop")
-- (the store is reached through opts.db)
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local json = require("kloop.mcp.json")
local schema = require("kloop.mcp.schema")
local defs = require("kloop.mcp.tool_defs")

local M = {}

M.LIMITS = defs.LIMITS
M.definitions = defs.list

local array = json.array

-- A long text cut to the limit with a marker saying how much was left out.
local function bounded(s, limit)
  if type(s) ~= "string" then return s end
  limit = limit or M.LIMITS.text_bytes
  if #s <= limit then return s end
  return s:sub(1, limit) .. string.format("\n[... %d more bytes truncated by kloop mcp]", #s - limit)
end
M.bounded = bounded

local function num(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge and x or nil end

-- A {lo, hi} interval (a CI) as a JSON array when both ends are finite numbers, or nil.
local function interval(t) return type(t) == "table" and num(t[1]) and num(t[2]) and array({ t[1], t[2] }) or nil end

-- The part of an evaluation result an agent sees: verdict, reason, evidence, the time
-- with its CI, rates and roofline, resources, the compile log (bounded).
local function summarize(r, candidate_id)
  local out = { candidate_id = candidate_id, verdict = r.verdict, reason = bounded(r.reason or ""),
    time_ms = num(r.time_ms), min_ms = num(r.min_ms), spread = num(r.spread), reps = num(r.reps),
    compile_log = r.compile_log and r.compile_log ~= "" and bounded(r.compile_log) or nil,
    compile_seconds = num(r.compile_seconds), eval_seconds = num(r.eval_seconds),
    wall_seconds = num(r.wall_seconds), gpu = type(r.gpu) == "string" and r.gpu or nil,
    arch = type(r.arch) == "string" and r.arch or nil, sandbox = type(r.sandbox) == "string" and r.sandbox or nil }
  out.ci_ms = interval(r.ci_ms)
  if type(r.evidence) == "table" then
    local ev = {}
    for k, v in pairs(r.evidence) do
      if type(v) == "string" then ev[k] = bounded(v, 512)
      elseif type(v) == "number" or type(v) == "boolean" then ev[k] = v end
    end
    out.evidence = ev
  end
  if num(r.tflops) or num(r.gbps) then
    out.roofline = { tflops = num(r.tflops), gbps = num(r.gbps), frac_peak = num(r.frac_peak),
      bound = type(r.bound) == "string" and r.bound or nil, floor_ms = num(r.floor_ms),
      frac_measured = num(r.frac_measured) }
  end
  if type(r.resources) == "table" and next(r.resources) then
    local res = {}
    for entry, x in pairs(r.resources) do
      if type(x) == "table" and next(x) then
        local e = {}
        for k, v in pairs(x) do if num(v) then e[k] = v end end
        res[tostring(entry)] = e
      end
    end
    if next(res) then out.resources = res end
  end
  return out
end
M.summarize = summarize

local Session = {}
Session.__index = Session

-- A tool session over one task. opts: task (loaded), task_path, db (an open store),
-- run_name, evaluator (one to use instead of starting our own), evaluator_opts, log
-- (function(msg), to stderr in kloop mcp), tools (names: only these are offered). The
-- run starts at the first recorded candidate; close() ends it.
-- opts.host (instead of db) judges and remembers for a strategy run:
--   host.judge(c, tool, args) -> result, candidate_id[, profile {verdict, reason}] | nil, why
--     (c = {src, defines, name, baseline, parent}; tool "check" or "profile")
--   host.lookup(id) -> {id, source, params, name} | nil   (candidate_id arguments)
--   host.candidates() -> rows like the store's (id, name, proposer, evaluation, evaluations)
--   host.best() -> such a row with source, params and speedup, or nil
--   host.run_id (shown by task_info, history and best)
function M.new(opts)
  assert(type(opts.task) == "table", "tools.new: give a loaded task")
  assert(opts.db or opts.host, "tools.new: give an open store (or a host)")
  local self = setmetatable({ task = opts.task, task_path = opts.task_path, db = opts.db, run_name = opts.run_name,
    ev = opts.evaluator, evaluator_opts = opts.evaluator_opts or {}, log = opts.log or function() end,
    host = opts.host, client = { name = "unknown", version = "" }, known = {}, by_name = {}, definitions = defs.list }, Session)
  if opts.host then self.run = opts.host.run_id end
  local offered
  if opts.tools then
    offered, self.definitions = {}, {}
    for _, n in ipairs(opts.tools) do offered[n] = true end
  end
  for _, t in ipairs(defs.list) do
    if not offered or offered[t.name] then
      self.by_name[t.name] = t
      if offered then self.definitions[#self.definitions + 1] = t end
    end
  end
  return self
end

-- The client's implementation info from initialize ({name, version}) and the protocol
-- version agreed; they become the proposer and provenance of what it sends.
function Session:set_client(info, protocol)
  local name = type(info) == "table" and type(info.name) == "string" and info.name or "unknown"
  -- a proposer name stays a plain word: what the store and reports show
  name = name:gsub("[^%w%._%-]", "_"):sub(1, 64)
  if name == "" then name = "unknown" end
  self.client = { name = name, version = type(info) == "table" and type(info.version) == "string" and info.version:sub(1, 64) or "",
    protocol = protocol }
  self.proposer = "agent:" .. name
end

function Session:evaluator()
  if not self.ev then
    local ev, err = kloop.evaluator(self.task, self.evaluator_opts)
    if not ev then return nil, err end
    self.ev = ev
  end
  return self.ev
end

function Session:run_id()
  if self.run then return self.run end
  local c = self.client
  local id, err = self.db:begin_run({ strategy = "mcp", task = self.task, task_path = self.task_path,
    strategy_text = string.format("kloop mcp: tool calls from agent:%s %s", c.name, c.version),
    options = { client = c.name, client_version = c.version, protocol = c.protocol, run_name = self.run_name } })
  if not id then return nil, err end
  self.run = id
  return id
end

-- Ends the run (done, with why) and stops the evaluator's worker.
function Session:close(status, reason)
  if self.ev then self.ev:close() self.ev = nil end
  if self.run then self.db:end_run(self.run, status or "done", reason or "the client disconnected") self.run = nil end
end

local function sorted_defines(d)
  local keys = util.sorted_keys(d or {})
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(d[k]) end
  return table.concat(parts, ",")
end

-- The source, defines and name a call asks for: its own source, a recorded candidate
-- (candidate_id: any run of this store) or, with neither, the task's own kernel.
-- Returns {src, defines, name, baseline, parent}, or nil, message, field.
function Session:resolve(args, path)
  local c = {}
  if args.source and args.candidate_id then
    return nil, path .. ".candidate_id: give source or candidate_id, not both", path .. ".candidate_id"
  end
  if args.candidate_id then
    local rec
    if self.host then rec = self.host.lookup(args.candidate_id) else rec = self.db:candidate(args.candidate_id) end
    if not rec then return nil, path .. ".candidate_id: no candidate " .. args.candidate_id, path .. ".candidate_id" end
    c.src, c.defines, c.name, c.parent = rec.source, args.defines or rec.params, rec.name, rec.id
  elseif args.source then
    c.src, c.defines, c.name = args.source, args.defines, args.name
  else
    c.src, c.defines, c.name, c.baseline = self.task.source, args.defines, util.basename(self.task.kernel), true
  end
  if c.defines and not next(c.defines) then c.defines = nil end
  c.name = c.name or args.name or "agent"
  return c
end

-- Records the candidate (once per source and defines in this session): id, or nil, msg.
function Session:record(c, tool)
  local key = sys.content_hash(c.src .. "\0" .. sorted_defines(c.defines))
  if self.known[key] then return self.known[key] end
  local run, err = self:run_id()
  if not run then return nil, err end
  local cl = self.client
  local id, aerr = self.db:add_candidate(run, { source = c.src, name = c.name, params = c.defines,
    parents = c.parent and { c.parent } or nil, proposer = c.baseline and "baseline" or self.proposer,
    model = cl.name .. (cl.version ~= "" and (" " .. cl.version) or ""),
    note = json.encode({ via = "kloop mcp", tool = tool, client = cl.name, client_version = cl.version,
      protocol = cl.protocol }) })
  if not id then return nil, aerr end
  self.known[key] = id
  return id
end

-- A tool result: structured content plus its text; is_error for a failed call.
local function ok(structured) return { structured = structured } end
local function fail(msg) return { is_error = true, text = msg } end

local function timing(args)
  return args.budget_s and { budget = args.budget_s } or nil
end

local H = {}

function H.task_info(self)
  local t = self.task
  local sig = array()
  for _, a in ipairs(t.args or {}) do
    sig[#sig + 1] = { name = a.name, type = a.ctype, role = a.role, size = type(a.size) == "string" and a.size or nil,
      value = (type(a.value) == "number" or type(a.value) == "string") and a.value or nil }
  end
  local cases = array()
  for _, s in ipairs(t.sizes and t.sizes.check or {}) do cases[#cases + 1] = s end
  local cost
  if type(t.cost) == "function" and t.sizes and t.sizes.bench then
    local okc, cc = pcall(t.cost, t.sizes.bench)
    if okc and type(cc) == "table" then cost = { flops = num(cc.flops), bytes = num(cc.bytes) } end
  end
  local gpu
  if t.backend == "cuda" then
    local g = kloop.core.gpu_probe(0)
    if g then
      gpu = {}
      for k, v in pairs(g) do if type(v) == "string" or num(v) or type(v) == "boolean" then gpu[k] = v end end
    end
  end
  local tol = {}
  for k, v in pairs(t.tolerance or {}) do if type(v) ~= "table" and type(v) ~= "function" then tol[k] = v end end
  return ok({ name = t.name, backend = t.backend, entry = t.entry, kernel = util.basename(t.kernel or ""),
    signature = sig, sizes = { bench = t.sizes and t.sizes.bench or {}, check = cases }, tolerance = tol,
    cost_bench = cost, unit = t.unit, gpu = gpu, baseline_source = bounded(t.source, M.LIMITS.source_bytes),
    limits = M.LIMITS, run_id = self.run, proposer = self.proposer })
end

function H.compile(self, args)
  local c, err, field = self:resolve(args, "arguments")
  if not c then return nil, err, field end
  local t = self.task
  local job
  -- (a task with its sizes compiled in is built at the bench size)
  local defines = require("kloop.eval.task").size_defines(t, t.sizes.bench, c.defines)
  if t.backend == "host" then
    job = require("kloop.eval.compile_host").compile(c.src, { arch = "host", dir = t.dir, options = t.options,
      defines = defines, name = c.name .. ".c" })
  else
    job = kloop.compile(c.src, { arch = args.arch or "sm_90", dir = t.dir, options = t.options, defines = defines,
      name = c.name .. ".cu", entries = { t.entry } })
  end
  -- (a host's run keeps evaluations only: a compile there is no candidate)
  local id, rerr
  if not self.host then
    id, rerr = self:record(c, "compile")
    if not id then return fail("the store could not record the candidate: " .. tostring(rerr)) end
  end
  local verdict = job.ok and "ok" or (job.rejected and "rejected" or "compile_error")
  if verdict ~= "ok" and id then
    self.db:add_evaluation(id, { verdict = verdict, reason = job.rejected and job.log or "compilation failed",
      compile_log = job.log, compile_seconds = job.seconds })
  end
  local res = summarize({ verdict = verdict, resources = job.resources, compile_log = job.log or "",
    compile_seconds = job.seconds, reason = verdict == "ok" and "compiled" or (job.rejected and job.log or "compilation failed") },
    id)
  res.log = res.compile_log or ""
  res.compile_log = nil
  res.cached = job.cached and true or false
  res.arch = t.backend == "host" and "host" or (args.arch or "sm_90")
  return ok(res)
end

-- Evaluates (for profile: evaluates, then profiles) and records the result through this
-- session's own evaluator and store: r, id, p, or nil, the tool error.
local function judge_here(self, c, args, tool)
  local ev, eerr = self:evaluator()
  if not ev then return nil, fail("cannot start the evaluator: " .. tostring(eerr)) end
  local id, rerr = self:record(c, tool)
  if not id then return nil, fail("the store could not record the candidate: " .. tostring(rerr)) end
  local r, p
  if tool == "profile" then
    r, p = ev:evaluate_and_profile(c.src, { defines = c.defines, name = c.name, timing = timing(args),
      metrics = args.metrics })
  else
    r = ev:evaluate(c.src, { defines = c.defines, name = c.name, timing = timing(args) })
  end
  if r.infrastructure then return nil, fail("kloop could not run the candidate: " .. bounded(tostring(r.reason))) end
  local eid, werr = self.db:add_evaluation(id, r)
  if not eid then return nil, fail("the store could not record the evaluation: " .. tostring(werr)) end
  return r, id, p
end

local function judge(self, args, tool)
  local c, err, field = self:resolve(args, "arguments")
  if not c then return nil, err, field end
  local r, id, p
  if self.host then
    r, id, p = self.host.judge(c, tool, args)
    if not r then return fail(tostring(id)) end
  else
    r, id, p = judge_here(self, c, args, tool)
    if not r then return id end
  end
  local out = summarize(r, id)
  if tool == "profile" and p then
    if p.verdict ~= "ok" then
      out.profile_error = bounded(tostring(p.reason))
    elseif type(r.profile) == "table" then
      local s, hints = r.profile, array()
      for _, h in ipairs(s.hints or {}) do hints[#hints + 1] = { kind = tostring(h.kind), text = bounded(tostring(h.text), 1024) } end
      out.profile = { bound = type(s.bound) == "string" and s.bound or nil, frac = num(s.frac), intensity = num(s.intensity),
        ridge = num(s.ridge), dram_bytes = num(s.dram_bytes), dram_vs_model = num(s.dram_vs_model),
        occupancy = type(s.occupancy) == "table" and s.occupancy or nil, hints = hints,
        no_counters = s.no_counters and bounded(tostring(s.no_counters), 1024) or nil,
        metrics = type(s.metrics) == "table" and s.metrics or nil }
    end
  end
  return ok(out)
end

function H.check(self, args) return judge(self, args, "check") end

function H.profile(self, args)
  if self.task.backend ~= "cuda" then
    return fail(string.format("profiling needs a CUDA task; %s runs on the %s backend (check gives its time, rate and roofline)",
      tostring(self.task.name), tostring(self.task.backend)))
  end
  return judge(self, args, "profile")
end

function H.compare(self, args)
  local a, err, field = self:resolve(args.a, "arguments.a")
  if not a then return nil, err, field end
  local b, berr, bfield = self:resolve(args.b, "arguments.b")
  if not b then return nil, berr, bfield end
  local ev, eerr = self:evaluator()
  if not ev then return fail("cannot start the evaluator: " .. tostring(eerr)) end
  local ida, rerr = self:record(a, "compare")
  local idb = ida and self:record(b, "compare")
  if not (ida and idb) then return fail("the store could not record the candidates: " .. tostring(rerr)) end
  local r = ev:compare(a.src, b.src, { defines_a = a.defines, defines_b = b.defines, timing = timing(args) })
  local ra = r.a or { verdict = "not_run", reason = "the other candidate failed" }
  local rb = r.b or { verdict = "not_run", reason = "the other candidate failed" }
  for _, x in ipairs({ { ida, ra, idb }, { idb, rb, ida } }) do
    if x[2].verdict ~= "not_run" and not x[2].infrastructure then
      x[2].compared_with = x[3]
      self.db:add_evaluation(x[1], x[2])
    end
  end
  local out = { a = summarize(ra, ida), b = summarize(rb, idb), ratio = num(r.ratio) }
  out.ratio_ci = interval(r.ratio_ci)
  if out.ratio_ci then
    -- ratio = time_a / time_b: b is faster when the whole CI is above 1
    out.faster = r.ratio_ci[1] > 1 and "b" or r.ratio_ci[2] < 1 and "a" or "neither"
  end
  return ok(out)
end

local function row_of(c)
  local e = c.evaluation or {}
  local note = type(c.note) == "string" and json.decode(c.note) or nil
  return { id = c.id, name = c.name, proposer = c.proposer, verdict = e.verdict or "pending",
    reason = e.reason and bounded(e.reason, 240) or nil, time_ms = num(e.time_ms),
    ci_ms = interval(e.ci_ms),
    tool = type(note) == "table" and type(note.tool) == "string" and note.tool or nil,
    evaluations = #(c.evaluations or {}), created_at = c.created_at }
end

function H.history(self, args)
  local limit = args.limit or M.LIMITS.history_default
  local rows = array()
  local total = 0
  if self.run or self.host then
    local list = self.host and self.host.candidates() or assert(self.db:candidates(self.run))
    local picked = {}
    for _, c in ipairs(list) do
      local r = row_of(c)
      if not args.verdict or r.verdict == args.verdict then picked[#picked + 1] = r end
    end
    total = #picked
    -- the most recent ones when there are more than the limit
    for i = math.max(1, #picked - limit + 1), #picked do rows[#rows + 1] = picked[i] end
  end
  return ok({ run_id = self.run, total = total, truncated = total > #rows, candidates = rows })
end

function H.best(self, args)
  local c
  if self.host then c = self.host.best() else c = self.run and self.db:best(self.run) end
  if not c then return ok({ found = false, run_id = self.run }) end
  local out = row_of(c)
  local e = c.evaluation or {}
  out.verdict, out.time_ms = e.verdict, num(e.time_ms)
  out.ci_ms = interval(e.ci_ms)
  out.candidate_id, out.id = c.id, nil
  out.found, out.run_id = true, self.run
  out.params = type(c.params) == "table" and next(c.params) and c.params or nil
  if args.include_source then out.source = bounded(c.source, M.LIMITS.source_bytes) end
  -- the speedup over the task's own kernel, when this run measured it (the store's run
  -- summary: its baseline over this same best)
  if self.host then
    out.speedup = num(c.speedup)
    return ok(out)
  end
  local run = self.db:run(self.run)
  out.speedup = run and num(run.speedup)
  return ok(out)
end

-- kloop promote (docs/PROMOTION.md) of a verified candidate of this run: a fresh worker
-- and secret, hidden sizes, more input distributions, the sanitizers, an A/B against the
-- incumbent; every step is recorded in the store. A refusal is a result (state refused
-- with the step's reason), not a tool error; a promotion that cannot run is one.
function H.promote(self, args)
  if self.host then return fail("promote is not a tool of the agent strategy (the search promotes its best)") end
  local c = self.db:candidate(args.candidate_id)
  if not c or c.run_id ~= self.run then
    return fail(string.format("candidate %d is not a candidate of this session's run", args.candidate_id))
  end
  local r, err = require("kloop.eval.promote").run(self.db, c.id, { task = self.task, quiet = true })
  if not r then return fail("promotion could not run: " .. bounded(tostring(err), M.LIMITS.text_bytes)) end
  local steps = array()
  for _, st in ipairs(r.steps or {}) do
    steps[#steps + 1] = { step = st.step, status = st.status, reason = bounded(tostring(st.reason or ""), 2048) }
  end
  return ok({ candidate_id = c.id, promoted = r.state == "promoted", state = r.state,
    reason = bounded(tostring(r.reason or ""), M.LIMITS.text_bytes), ratio = num(r.ratio),
    ratio_ci = interval(r.ratio_ci),
    promotion_id = r.promotion_id, steps = steps })
end

-- Calls a tool: a result {structured, text, is_error}, or nil, message, field for a
-- call the schema refuses (unknown tool, bad arguments: a JSON-RPC error for the caller).
function Session:call(name, args)
  local def = self.by_name[name]
  if not def then return nil, "unknown tool: " .. tostring(name), "name" end
  if args == nil or args == json.null then args = {} end
  local okv, err, field = schema.check(def.inputSchema, args, "arguments")
  if not okv then return nil, err, field end
  if not self.proposer then self:set_client(nil) end
  return H[name](self, args)
end

return M
