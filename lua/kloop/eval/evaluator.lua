-- kloop.eval.evaluator: the parent side of evaluation: compiles candidates, drives a worker
-- process per GPU, survives whatever the candidate does, and returns result tables.
local core = require("kloop.core.ffi")
local cjson = require("cjson")
local util = require("kloop.util")
local taskmod = require("kloop.eval.task")
local plan = require("kloop.eval.plan")
local compile = require("kloop.eval.compile")
local compile_host = require("kloop.eval.compile_host")
local ffi = core.ffi
local C = core.C

local M = {}

-- Peak rates per SM per clock by compute capability and unit (flop/clk/SM), for the
-- physical floor. Unknown chips get a generous guess so the floor never lies.
local RATES = {
  [90] = { fp32 = 256, tf32 = 2048, fp16 = 4096, bf16 = 4096, fp8 = 8192, fp64 = 128 },
  [80] = { fp32 = 128, tf32 = 1024, fp16 = 2048, bf16 = 2048, fp64 = 64 },
}

function M.peaks(gpu, unit)
  local rates = RATES[tonumber(gpu.arch:match("sm_(%d+)"))] or {}
  local per_clk = rates[unit or "fp32"] or 16384
  local flops = gpu.sm_count * per_clk * gpu.clock_khz * 1e3
  local bw = gpu.mem_clock_khz * 1e3 * 2 * gpu.mem_bus_width / 8
  return { flops = flops, bytes = bw }
end

-- The L2 flush before each timed repetition (CUDA): every thread streams float4s of a
-- buffer twice the L2 that holds zeros; the store never happens, the loads must.
M.flush_source = [[
extern "C" __global__ void kloop_l2_flush(const float4 *buf, unsigned long long n4, float *sink) {
  float acc = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    float4 v = buf[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) *sink = acc;
}
]]

-- Guard zones and state digests on the GPU (kl_regions_check in src/kl_buf.c is the
-- same computation on the host): blockIdx.y picks a region, the blocks of a row share it.
-- The descriptors are copied in right before each launch, so a candidate that ran
-- earlier cannot have changed what is checked; results are zeroed the same way.
M.check_source = [[
struct kl_region { unsigned long long ptr, nwords, seed; unsigned mode, word; };
struct kl_region_result { unsigned long long value, first; };
__device__ __forceinline__ unsigned kl_fmix32(unsigned h) {
  h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16; return h;
}
__device__ __forceinline__ unsigned kl_pos_key(unsigned long long i, unsigned long long seed) {
  return kl_fmix32((unsigned)i * 0x9E3779B1u + (unsigned)(i >> 32) * 0x7FEB352Du + (unsigned)seed);
}
extern "C" __global__ void kloop_check_regions(const kl_region *regs, kl_region_result *out) {
  const kl_region g = regs[blockIdx.y];
  const unsigned *w = (const unsigned *)g.ptr;
  unsigned long long acc = 0, first = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < g.nwords;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned v = w[i];
    unsigned k = kl_pos_key(i, g.seed);
    if (g.mode == 0) {
      acc += kl_fmix32(v ^ k);
    } else {
      unsigned want = g.mode == 1 ? kl_fmix32(k ^ (unsigned)(g.seed >> 32)) : g.word;
      if (v != want) { acc += 1; if (first < ~i) first = ~i; }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    acc += __shfl_down_sync(0xffffffffu, acc, o);
    unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
    if (f > first) first = f;
  }
  if ((threadIdx.x & 31) == 0) {
    if (acc) atomicAdd(&out[blockIdx.y].value, acc);
    if (first) atomicMax(&out[blockIdx.y].first, first);
  }
}
]]

local Evaluator = {}
Evaluator.__index = Evaluator

function M.new(task, opts)
  opts = opts or {}
  local self = setmetatable({ task = task, opts = opts, nsets = opts.nsets or 2, restarts = 0 }, Evaluator)
  local secret = opts.secret
  if not secret then
    local buf = ffi.new("uint8_t[16]")
    C.kl_random_bytes(buf, 16)
    secret = ""
    for i = 0, 15 do secret = secret .. string.format("%02x", buf[i]) end
  end
  self.secret = secret
  self.log = opts.log or function() end
  return self
end

-- Seeds for case/set/arg drawn from the run secret (below 2^52, so JSON carries them).
function Evaluator:seed(label, s, i)
  local key = self.secret .. "/" .. label .. "/" .. s .. "/" .. i
  local h = C.kl_hash64(key, #key, 0x6b6c6f6f70ULL)
  return tonumber(h % 0x10000000000000ULL)
end

-- The concrete task the worker sees: numbers only, no Lua functions.
function Evaluator:spec()
  local task = self.task
  -- guard patterns and digests are keyed by the run secret: a candidate cannot know them
  local gkey = self.secret .. "/guards"
  local spec = { args = {}, cases = {}, nsets = self.nsets, tolerance = task.tolerance,
    guard_seed = tonumber(C.kl_hash64(gkey, #gkey, 0) % 0x10000000000000ULL),
    reference = { entry = task.reference.entry or task.entry, precision = task.reference.precision or "f32" } }
  for i, a in ipairs(task.args) do
    spec.args[i] = { name = a.name, dtype = a.dtype, pointer = a.pointer, role = a.role, dists = a.dists }
  end
  for ci, case in ipairs(taskmod.cases(task)) do
    local seeds = {}
    for s = 1, self.nsets do
      seeds[s] = {}
      for i = 1, #task.args do seeds[s][i] = self:seed(case.label, s, i) end
    end
    local rtask = { launch = task.reference.launch or task.launch, entry = spec.reference.entry, file = task.file }
    -- the reference runs at the point it was compiled at (kloop.task.fill_defaults)
    local point = taskmod.fill_defaults(task, task.reference.baseline and task.source or task.reference.source, nil)
    spec.cases[ci] = { label = case.label, bench = case.bench or false, size = case.size,
      args = taskmod.concrete_args(task, case.size, point), seeds = seeds,
      ref_plan = plan.for_task(rtask, case.size, nil, point) }
  end
  return spec
end

-- How long one request may take, and where that figure comes from. A fixed deadline
-- (the run's --deadline, else the task's) wins; otherwise, once the baseline has been
-- timed, it follows from the work: the launches the request makes, each estimated from
-- the baseline's bench time scaled by the cost model, times a generous factor, plus the
-- timing budget and a floor. Before the baseline: 120 s.
M.DEADLINE_FLOOR, M.DEADLINE_FACTOR, M.DEADLINE_FIRST = 5, 4, 120

function Evaluator:deadline(op, timing)
  if self.opts.deadline then return self.opts.deadline, "the run's --deadline" end
  if self.task.deadline then return self.task.deadline, "the task's deadline" end
  local ref = self.work_ref
  if not ref then return M.DEADLINE_FIRST, "the first evaluation's default" end
  local factor = self.opts.deadline_factor or self.task.deadline_factor or M.DEADLINE_FACTOR
  local bench = self:cost(self.task.sizes.bench)
  local function scale(size)
    local c = self:cost(size)
    return math.max(c.flops / math.max(bench.flops, 1), c.bytes / math.max(bench.bytes, 1), 0.01)
  end
  -- verification: every size x (sets + a repeat); timing: at least min_reps, checks included.
  -- A screen verifies one size with one set, and its timing has no budget to spend.
  local launches = 0
  if op == "screen" then
    launches = scale(self:screen_case().size)
  else
    for _, case in ipairs(taskmod.cases(self.task)) do launches = launches + (self.nsets + 1) * scale(case.size) end
  end
  timing = timing or {}
  local reps = (timing.min_reps or 5) + 3
  local ncand = op == "compare" and 2 or 1
  if op == "profile" then reps = reps + 4 + 16 end -- activity runs and metric passes
  local work = ncand * (launches + reps) * ref.ms * 1e-3
  local budget = ncand * (op == "screen" and 0 or timing.budget or 2.0)
  local s = M.DEADLINE_FLOOR + factor * work + 2 * budget
  return s, string.format("%.0fx the expected work (%.1f launches at the baseline's %.3f ms) + %.1f s of timing + %d s",
    factor, ncand * (launches + reps), ref.ms, 2 * budget, M.DEADLINE_FLOOR)
end

local function exe_path()
  return core.exe_path() or "kloop"
end

-- Variables a worker may see: no API keys, nothing of the user's beyond the basics.
M.worker_env = { "PATH", "HOME", "LANG", "LC_", "CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "KLOOP_LUA_DIR",
  "KLOOP_EMBEDDED_ONLY", "KLOOP_CUDA_HOME", "TMPDIR",
  -- profilers (ncu, compute-sanitizer) inject through these
  "LD_PRELOAD", "NV_", "NSIGHT", "NVTX_" }

-- A host worker runs C code nobody read: it sees even less.
M.host_worker_env = { "PATH", "LANG", "LC_", "KLOOP_LUA_DIR", "KLOOP_EMBEDDED_ONLY", "TMPDIR" }

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

-- Replaces the entry names of plans ({label -> kernels}) by the lowered ones a job found.
local function lower_entries(plans, job)
  local low = job and job.lowered or {}
  if not next(low) then return end
  for _, p in pairs(plans) do
    for _, k in ipairs(p) do k.entry = low[k.entry] or k.entry end
  end
end

function Evaluator:compile_source(src, opts)
  local compiler, copts = self:compiler(opts, src)
  return compiler.compile(src, copts)
end

function Evaluator:spawn()
  local argv = { exe_path(), "--worker", self:backend() }
  local env_list = self:backend() == "host" and M.host_worker_env or M.worker_env
  local proc, err = core.spawn(argv, env_list)
  if not proc then return nil, err end
  self.proc = proc
  return true
end

-- The worker's last output (a killed worker's is kept: printf floods, crash messages).
function Evaluator:output_tail()
  if not self.proc then return self.last_tail or "" end
  return ffi.string(self.proc.tail, self.proc.tail_len)
end

-- One request/reply with a deadline. Returns reply, or nil, kind ("timeout"|"crashed"|"error"), msg.
function Evaluator:request(req, timeout_s)
  local s = cjson.encode(req)
  local err = ffi.new("kl_err")
  if C.kl_proc_send(self.proc, s, #s, err) ~= 0 then
    local m = ffi.string(err.msg)
    self:kill()
    return nil, "crashed", m
  end
  local data, n = ffi.new("char*[1]"), ffi.new("size_t[1]")
  local st = C.kl_proc_recv(self.proc, math.floor(timeout_s * 1000), data, n, err)
  if st == C.KL_ETIMEOUT then
    self:kill()
    return nil, "timeout", string.format("no answer within %.0f s: the worker was killed", timeout_s)
  elseif st ~= 0 then
    local m = ffi.string(err.msg)
    self:kill()
    return nil, "crashed", m
  end
  local reply = ffi.string(data[0], n[0])
  C.kl_free(data[0])
  local ok, tbl = pcall(cjson.decode, reply)
  if not ok then
    -- a Ctrl-C served inside this pcall is not the worker's fault: pass it on
    if C.kl_sigint_pending() > 0 then error("interrupted", 0) end
    self:kill()
    return nil, "error", "unreadable reply from the worker"
  end
  return tbl
end

function Evaluator:kill()
  if self.proc then
    self.last_tail = ffi.string(self.proc.tail, self.proc.tail_len)
    C.kl_proc_kill(self.proc)
    self.proc = nil
    self.ready = false
  end
end

function Evaluator:close()
  if self.proc then
    local s = cjson.encode({ op = "quit" })
    local err = ffi.new("kl_err")
    C.kl_proc_send(self.proc, s, #s, err)
    C.kl_proc_close(self.proc, 2000)
    self.proc = nil
    self.ready = false
  end
end

-- Starts (or restarts) the worker: hello, compile the reference, set the task up.
function Evaluator:start()
  if self.ready then return true end
  local ok, err = self:spawn()
  if not ok then return nil, "cannot start a worker: " .. err end
  local hello, kind, msg = self:request({ op = "hello", device = self.opts.device or 0,
    sandbox = self.opts.sandbox, device_heap = self.task.device_heap }, 60)
  if not hello then return nil, "worker did not start (" .. kind .. "): " .. msg .. "\n" .. self:output_tail() end
  if not hello.ok then self:kill() return nil, hello.error end
  self.gpu = hello.gpu
  self.arch = self.opts.arch or hello.gpu.arch
  if not self.ref_job then
    local ref = self.task.reference
    local src = ref.baseline and self.task.source or ref.source
    local job = self:compile_source(src, { name = ref.baseline and util.basename(self.task.kernel) or util.basename(ref.path),
      entries = { ref.entry or self.task.entry } })
    if not job.ok then
      self:kill()
      return nil, "the reference does not compile:\n" .. compile.filter_log(job.log)
    end
    self.ref_job = job
  end
  if not self.task_spec then
    self.task_spec = self:spec()
    -- a C++ reference resolves by its lowered name
    local low = self.ref_job.lowered or {}
    local spec = self.task_spec
    spec.reference.entry = low[spec.reference.entry] or spec.reference.entry
    for _, case in ipairs(spec.cases) do
      for _, k in ipairs(case.ref_plan) do k.entry = low[k.entry] or k.entry end
    end
  end
  local own = {} -- kloop's own kernels the CUDA worker needs: the L2 flush and the state check
  if self:backend() == "cuda" then
    for _, k in ipairs({ { "flush", M.flush_source, "kloop_l2_flush.cu", "L2 flush" },
                         { "check", M.check_source, "kloop_check_regions.cu", "state-check" } }) do
      local j = compile.compile(k[2], { arch = self.arch, name = k[3] })
      if not j.ok then
        self:kill()
        return nil, "kloop's " .. k[4] .. " kernel does not compile:\n" .. compile.filter_log(j.log)
      end
      own[k[1]] = j.cubin_path
    end
  end
  local t0 = C.kl_now()
  local r
  r, kind, msg = self:request({ op = "setup", spec = self.task_spec, ref_cubin = self.ref_job.cubin_path,
    flush_cubin = own.flush, check_cubin = own.check }, 900)
  if not r then return nil, "task setup failed (" .. kind .. "): " .. msg end
  if not r.ok then self:kill() return nil, "task setup failed: " .. tostring(r.error) end
  self.setup_seconds = C.kl_now() - t0
  self.ready = true
  if self:backend() == "cuda" and self.opts.measure_peaks ~= false and not self.measured then
    -- measured once per GPU and cached on disk; a failure only costs the figure
    local p = require("kloop.eval.peaks").get(self)
    self.measured = p or false
    if not self.proc then self.ready = false return self:start() end
  end
  return true
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

-- The task's cost model at a size for a candidate's parameters (the default point's
-- where it names none): a cost that depends on a tunable sees it.
function Evaluator:cost(size, defines)
  local point = taskmod.default_point(self.task.params)
  for k, v in pairs(defines or {}) do point[k] = v end
  return self.task.cost(taskmod.with_params(size, point))
end

function Evaluator:floor_ms(defines)
  local cost = self:cost(self.task.sizes.bench, defines)
  -- no measured CPU peaks yet: the host backend has no floor (docs/SECURITY.md)
  if self:backend() == "host" then return nil, cost, nil end
  local peaks = M.peaks(self.gpu, self.task.unit)
  local t = math.max(cost.flops / peaks.flops, cost.bytes / peaks.bytes)
  -- the clock attribute is the boost clock; keep 10% so a real kernel is never refused
  return 0.9 * t * 1e3, cost, peaks
end

-- Compiles a candidate and builds its launch plans: returns the worker request part
-- ({cubin, plans, floor_ms}) and the job, or nil, a result table with the verdict, job.
function Evaluator:prepare(src, opts)
  local job = self:compile_source(src, opts)
  if job.rejected then return nil, { verdict = "rejected", reason = job.log }, job end
  if not job.ok then
    return nil, { verdict = "compile_error", reason = job.timeout and "compile deadline exceeded" or "does not compile",
      log = compile.filter_log(job.log) }, job
  end
  local plans, perr = self:plans(src, opts.defines)
  if not plans then return nil, { verdict = "launch_error", reason = "launch plan: " .. perr }, job end
  lower_entries(plans, job)
  if self:backend() == "cuda" then
    -- large static device data is where a kernel would keep results between launches
    local image = util.read_file(job.cubin_path)
    local bytes = image and compile.static_data_bytes(image)
    local limit = self.task.static_data or M.STATIC_DATA_LIMIT
    if bytes and bytes > limit then
      return nil, { verdict = "rejected", static_data_bytes = bytes, reason = string.format(
        "the module declares %s of static __device__ data (limit %s): a task that needs it sets static_data = %d in its sidecar",
        string.format("%.2f MiB", bytes / 2^20), string.format("%.2f MiB", limit / 2^20), bytes) }, job
    end
    job.static_data_bytes = bytes
  end
  return { cubin = job.cubin_path, plans = plans, floor_ms = self:floor_ms(opts.defines) }, nil, job
end

M.STATIC_DATA_LIMIT = 2^20

-- Compiles a batch of candidates in parallel ahead of their evaluation, so the
-- evaluations that follow find their binaries in the cache. cands: {source, defines}.
function Evaluator:precompile(cands)
  if self:backend() == "host" then return end -- cc runs per evaluation
  local ok = self:start()
  if not ok then return end
  local jobs = {}
  for _, c in ipairs(cands) do
    local _, copts = self:compiler(c, c.source or self.task.source)
    local job = compile.prepare(c.source or self.task.source, copts)
    if job then jobs[#jobs + 1] = job end
  end
  compile.run(jobs, { parallel = self.opts.compile_parallel })
end

-- Adds achieved rates and the fraction of the ceiling to a timed result.
function Evaluator:derive(result, defines)
  if result.verdict == "ok" or result.verdict == "too_fast" then
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

-- Sends a request that runs candidate code; a dead or hung worker becomes a verdict.
function Evaluator:run_request(req)
  local deadline, source = self:deadline(req.op, req.timing)
  local reply, kind, msg = self:request(req, deadline)
  if not reply and kind == "timeout" then
    msg = string.format("no answer within %.1f s (deadline: %s): the worker was killed", deadline, source)
  end
  if not reply then
    self.restarts = self.restarts + 1
    if msg:find("signal 31", 1, true) then
      msg = msg .. ": the sandbox stopped a forbidden system call (exec, fork, sockets, signals to other processes, file writes or metadata changes: docs/SECURITY.md)"
    end
    return nil, { verdict = kind == "timeout" and "timeout" or "crashed", reason = msg,
      output_tail = self:output_tail() }
  end
  if reply.ok == false then
    -- kloop's own worker code failed: say so plainly, and start afresh next time
    self:kill()
    return nil, { verdict = "crashed", reason = "kloop worker error: " .. tostring(reply.error) }
  end
  reply.ok = nil
  if reply.restart then
    -- the worker could not show its state intact after this candidate: it exited
    self:kill()
    self.restarts = self.restarts + 1
  end
  if reply.fatal then
    -- the worker exits after a fatal error; reap it so the next call restarts it
    self:kill()
    self.restarts = self.restarts + 1
  end
  return reply
end

-- Evaluates one candidate source (nil: the task's own kernel). opts: defines, timing.
-- Always returns a result table with a verdict.
function Evaluator:evaluate(src, opts)
  opts = opts or {}
  local result = self:judge("full", src or self.task.source, opts)
  self:watch(src or self.task.source, opts, result)
  return result
end

-- One evaluation at a stage ("full" or "screened"), for evaluate, screen and the
-- sentinel's re-evaluations alike: the request, the derived rates, the stage and the
-- wall time on the result, and the slowest verified bench time kept for deadlines (a
-- screened median is a real bench time too: it may only lengthen them).
function Evaluator:judge(stage, src, opts)
  local t0 = C.kl_now()
  local extra
  if stage == "screened" then extra = { screen_case = self:screen_case().label }
  elseif opts.verify_only then extra = { verify_only = true } end
  local result = self:derive(self:submit(stage == "screened" and "screen" or "evaluate", src, opts, extra), opts.defines)
  result.stage = stage
  result.wall_seconds = C.kl_now() - t0
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
function Evaluator:screen(src, opts)
  opts = opts or {}
  local reps = opts.reps or self.opts.screen_reps or M.SCREEN_REPS
  local sopts = {}
  for k, v in pairs(opts) do sopts[k] = v end
  sopts.timing = { min_reps = reps, max_reps = reps, budget = 0 }
  local result = self:judge("screened", src or self.task.source, sopts)
  self:watch(src or self.task.source, sopts, result)
  return result
end

-- The sentinel (defence in depth behind the state checks): every SENTINEL_EVERY
-- candidates, and after SENTINEL_STREAK failed verifications in a row, the fastest
-- verified candidate so far is verified again in the same worker. If its verdict
-- changed, the worker cannot be trusted: it is restarted, and every candidate judged
-- since the last good sentinel is evaluated again; their result tables are updated in
-- place (result.reevaluated says what they had) and opts.on_reevaluate(result) is told.
M.SENTINEL_EVERY, M.SENTINEL_STREAK, M.SENTINEL_KEEP = 16, 4, 64
local FAILED_VERIFICATION = { wrong = true, unwritten = true, nan = true, inputs_modified = true,
  nondeterministic = true, out_of_bounds = true }

-- Screened results are judged too (evaluated again, as screens, when the sentinel
-- fails), but only full verifications count: the known-good candidate, the count
-- towards SENTINEL_EVERY and the streak of failures come from full evaluations alone.
function Evaluator:watch(src, opts, result)
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

function Evaluator:run_sentinel()
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
    local previous = { verdict = old.verdict, reason = old.reason, time_ms = old.time_ms }
    for k in pairs(old) do old[k] = nil end
    for k, v in pairs(new) do old[k] = v end
    old.reevaluated = { previous = previous, why = "the sentinel failed after it (" .. r.verdict .. ")" }
    if self.opts.on_reevaluate then self.opts.on_reevaluate(old) end
  end
  self.in_sentinel = false
  return false
end

-- Starts the worker if needed, compiles src, sends it as request `op` (with the timing
-- and what `extra` adds) and returns the annotated result: a verdict for any failure on
-- the way, infrastructure = true where kloop itself could not run it.
function Evaluator:submit(op, src, opts, extra)
  local ok, err = self:start()
  if not ok then return { verdict = "launch_error", reason = err, infrastructure = true } end
  local req, result, job = self:prepare(src, opts)
  if req then
    req.op = op
    req.timing = self:timing(opts.timing)
    for k, v in pairs(extra or {}) do req[k] = v end
    local reply, failed = self:run_request(req)
    result = reply or failed
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
  local t0 = C.kl_now()
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
  result.wall_seconds = C.kl_now() - t0
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

-- A/B comparison of two sources (nil: the task's kernel), timed interleaved.
-- Returns {a = result, b = result, ratio = time_a / time_b, ratio_ci = {lo, hi}}.
function Evaluator:compare(src_a, src_b, opts)
  opts = opts or {}
  local ok, err = self:start()
  if not ok then return { a = { verdict = "launch_error", reason = err }, b = { verdict = "launch_error", reason = err } } end
  local ra, fa, ja = self:prepare(src_a or self.task.source, { defines = opts.defines_a, name = "a.cu" })
  local rb, fb, jb = self:prepare(src_b or self.task.source, { defines = opts.defines_b, name = "b.cu" })
  if not (ra and rb) then
    return { a = self:annotate(fa or { verdict = "not_run", reason = "the other candidate failed" }, ja),
             b = self:annotate(fb or { verdict = "not_run", reason = "the other candidate failed" }, jb) }
  end
  local reply, failed = self:run_request({ op = "compare", a = ra, b = rb, timing = self:timing(opts.timing) })
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
