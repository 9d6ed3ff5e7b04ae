-- kloop.llm.context: the context every prompt template receives: the task, the GPU or
-- the CPU (host tasks), the parent and the best candidate, the attempts so far. Every
-- field is present (false when unknown), so a template's placeholders are checked
-- against one fixed schema (kloop.llm.prompt.render). What a result may say comes from
-- kloop.llm.evidence. Nothing here raises on missing facts; a module that fails to load
-- is an error, not a quieter prompt.
local util = require("kloop.util")
local evidence = require("kloop.llm.evidence")

local M = {}

local finite, int, num, sizes_text = evidence.finite, evidence.int, evidence.num, evidence.sizes_text
local reason_text, log_text, summary = evidence.reason_text, evidence.log_text, evidence.summary
local verdict_name, bound_name = evidence.verdict_name, evidence.bound_name

local function bytes_text(b)
  if type(b) ~= "number" then return false end
  if b >= 1048576 then return string.format("%.4g MiB", b / 1048576) end
  if b >= 1024 then return string.format("%.4g KiB", b / 1024) end
  return string.format("%d B", b)
end

-- The entry's signature, read from the task's kernel (kloop.eval.task's parser, loaded
-- on first use: it is not needed for prompts without a task); from the task's argument
-- list when the kernel has no parsable definition of the entry.
local function signature(task)
  if task.source then
    local params = require("kloop.eval.task").kernel_params(task.source, task.entry, task.backend == "host")
    if params then
      local ps = {}
      for _, p in ipairs(params) do ps[#ps + 1] = p.ctype .. " " .. p.name end
      local head = task.backend == "host" and "void " or 'extern "C" __global__ void '
      return head .. task.entry .. "(" .. table.concat(ps, ", ") .. ")"
    end
  end
  local ps = {}
  for _, a in ipairs(task.args or {}) do ps[#ps + 1] = (a.ctype or a[2] or "?") .. " " .. (a.name or a[1] or "?") end
  return 'extern "C" __global__ void ' .. tostring(task.entry) .. "(" .. table.concat(ps, ", ") .. ")"
end

local function task_ctx(task)
  if not task then
    return { name = false, entry = false, signature = false, args = false, sizes = false, check_sizes = false,
      tolerance = false, cost = false, unit = false, source = false, backend = false, params = false, host = false }
  end
  local args = {}
  for _, a in ipairs(task.args or {}) do
    local line = string.format("- %s: %s", a.name, a.ctype)
    if a.pointer then line = line .. string.format(" (%s, %s elements)", a.role or "buffer", tostring(a.size)) end
    args[#args + 1] = line
  end
  local checks = {}
  for _, s in ipairs(task.sizes and task.sizes.check or {}) do checks[#checks + 1] = sizes_text(s, task) end
  local cost = false
  if type(task.cost) == "function" and task.sizes then
    local ok, c = pcall(task.cost, task.sizes.bench)
    if ok and type(c) == "table" and c.flops and c.bytes then
      cost = string.format("%.4g GFLOP and %.4g MB of compulsory traffic at the bench size", c.flops / 1e9, c.bytes / 1e6)
    end
  end
  local tol = task.tolerance or {}
  local params = {}
  for _, k in ipairs(util.sorted_keys(task.params or {})) do
    local vs = {}
    for _, v in ipairs(task.params[k]) do vs[#vs + 1] = tostring(v) end
    params[#params + 1] = k .. " in {" .. table.concat(vs, ", ") .. "}"
  end
  return {
    name = task.name or false, entry = task.entry or false, signature = signature(task),
    args = #args > 0 and table.concat(args, "\n") or false,
    sizes = task.sizes and sizes_text(task.sizes.bench, task) or false,
    check_sizes = #checks > 0 and table.concat(checks, "; ") or false,
    tolerance = string.format("relative L2 error <= %g%s%s", tol.rel or 1e-5,
      tol.max_abs and string.format(", |error| <= %g per element", tol.max_abs) or "",
      tol.deterministic == "exact" and (task.backend == "host" and ", bit-identical across runs (no races between threads)"
        or ", bit-identical across runs (no atomics races)") or ""),
    cost = cost, unit = task.unit or "fp32", source = task.source or false, backend = task.backend or "cuda",
    host = task.backend == "host",
    params = #params > 0 and table.concat(params, "; ") or false,
  }
end

local function gpu_ctx(gpu, task)
  if not gpu or gpu.arch == "host" or (task and task.backend == "host") then
    return { name = false, arch = false, sm_count = false, l2 = false, smem_per_block = false,
      smem_per_block_optin = false, smem_per_sm = false, regs_per_block = false, peak_tflops = false,
      peak_gbps = false }
  end
  local peak_f, peak_b = false, false
  if gpu.peaks then
    peak_f, peak_b = num(gpu.peaks.flops and gpu.peaks.flops / 1e12), num(gpu.peaks.bytes and gpu.peaks.bytes / 1e9)
  elseif gpu.arch and gpu.sm_count and gpu.clock_khz and gpu.mem_clock_khz then
    -- (a GPU the datasheet table does not know has no peaks: the facts go without them)
    local ok, p = pcall(require("kloop.eval.evaluator").peaks, gpu, task and task.unit)
    if ok then peak_f, peak_b = num(p.flops / 1e12), num(p.bytes / 1e9) end
  end
  return {
    name = gpu.name or false, arch = gpu.arch or false, sm_count = gpu.sm_count or false,
    l2 = bytes_text(gpu.l2_bytes), smem_per_block = bytes_text(gpu.smem_per_block),
    smem_per_block_optin = bytes_text(gpu.smem_per_block_optin), smem_per_sm = bytes_text(gpu.smem_per_sm),
    regs_per_block = gpu.regs_per_block or false, peak_tflops = peak_f, peak_gbps = peak_b,
  }
end

-- ---- the CPU a host (C) task runs on ----

-- ISA extensions worth telling a model about, widest first: cpuinfo flag, name.
local ISA = {
  { "avx512f", "AVX-512F" }, { "avx512bw", "AVX-512BW" }, { "avx512vl", "AVX-512VL" }, { "avx512dq", "AVX-512DQ" },
  { "avx512_vnni", "AVX-512 VNNI" }, { "avx512_bf16", "AVX-512 BF16" }, { "avx512_fp16", "AVX-512 FP16" },
  { "amx_tile", "AMX" }, { "avx2", "AVX2" }, { "fma", "FMA" }, { "avx", "AVX" }, { "f16c", "F16C" },
  { "bmi2", "BMI2" }, { "sse4_2", "SSE4.2" },
  -- aarch64 (Features line)
  { "sve2", "SVE2" }, { "sve", "SVE" }, { "asimd", "NEON (ASIMD)" }, { "asimdhp", "NEON fp16" },
  { "asimddp", "NEON dot product" }, { "i8mm", "I8MM" }, { "bf16", "BF16" },
}

local function size_bytes(s)
  local n, unit = tostring(s or ""):match("^%s*(%d+)%s*([KMG]?)")
  if not n then return nil end
  return tonumber(n) * ({ [""] = 1, K = 1024, M = 1048576, G = 1073741824 })[unit]
end

-- Counts the CPUs of a cpulist ("0-3,8"): how many share a cache.
local function cpulist_count(l)
  local n = 0
  for part in tostring(l or ""):gmatch("[^,%s]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    n = n + (a and (tonumber(b) - tonumber(a) + 1) or 1)
  end
  return n
end

-- The CPU's facts: {model, logical, physical, isa = {names}, vector_bits, caches = {{level,
-- type, bytes, shared}}}. opts.cpuinfo (text) and opts.cache_dir (a cpu0/cache folder)
-- replace the machine's files (tests).
function M.cpu_facts(opts)
  opts = opts or {}
  local info = opts.cpuinfo or util.read_file("/proc/cpuinfo") or ""
  local f = { logical = 0, isa = {}, caches = {} }
  local flags, cores = nil, {}
  local phys = "0"
  for line in info:gmatch("[^\n]+") do
    local k, v = line:match("^([^:]-)%s*:%s*(.*)$")
    if k == "processor" then f.logical = f.logical + 1
    elseif k == "model name" or (k == "Model" and not f.model) then f.model = f.model or v
    elseif (k == "flags" or k == "Features") and not flags then flags = v
    elseif k == "physical id" then phys = v
    elseif k == "core id" then cores[phys .. ":" .. v] = true end
  end
  local n = 0
  for _ in pairs(cores) do n = n + 1 end
  f.physical = n > 0 and n or nil
  local have = {}
  for w in (flags or ""):gmatch("%S+") do have[w] = true end
  for _, e in ipairs(ISA) do if have[e[1]] then f.isa[#f.isa + 1] = e[2] end end
  f.vector_bits = (have.avx512f and 512) or ((have.avx2 or have.avx) and 256) or ((have.sse2 or have.asimd) and 128) or nil
  local dir = opts.cache_dir or "/sys/devices/system/cpu/cpu0/cache"
  for i = 0, 9 do
    local base = dir .. "/index" .. i .. "/"
    local level = util.read_file(base .. "level")
    if not level then break end
    local kind = (util.read_file(base .. "type") or ""):gsub("%s+$", "")
    local bytes = size_bytes(util.read_file(base .. "size"))
    if kind ~= "Instruction" and bytes then
      f.caches[#f.caches + 1] = { level = tonumber(level), type = kind, bytes = bytes,
        shared = cpulist_count((util.read_file(base .. "shared_cpu_list") or ""):gsub("%s+$", "")) }
    end
  end
  return f
end

local cpu_cache
local function host_ctx(task, raw)
  local none = { cpu = false, cores = false, isa = false, vector = false, caches = false, compiler = false,
    flags = false, openmp = false }
  if not task or task.backend ~= "host" then return none end
  local f = raw or cpu_cache
  if not f then cpu_cache = M.cpu_facts() f = cpu_cache end
  local out = none
  out.cpu = f.model or false
  if f.logical and f.logical > 0 then
    out.cores = f.logical .. " logical CPUs" .. (f.physical and f.physical ~= f.logical and
      string.format(" (%d physical cores)", f.physical) or "")
  end
  out.isa = #(f.isa or {}) > 0 and table.concat(f.isa, ", ") or false
  if f.vector_bits then
    out.vector = string.format("%d-bit vectors: %d floats or %d doubles per register", f.vector_bits,
      f.vector_bits / 32, f.vector_bits / 64)
  end
  local cs = {}
  for _, c in ipairs(f.caches or {}) do
    local label = "L" .. c.level .. (c.type == "Data" and "d" or "")
    cs[#cs + 1] = label .. " " .. bytes_text(c.bytes) .. (c.shared and c.shared > 1 and
      string.format(" (shared by %d CPUs)", c.shared) or "")
  end
  out.caches = #cs > 0 and table.concat(cs, ", ") or false
  local ch = require("kloop.eval.compile_host")
  local ok, ver = pcall(ch.cc_version)
  out.compiler = ok and ver ~= "unknown" and ver or ch.cc()
  local flags = {}
  for _, o in ipairs(ch.default_options) do flags[#flags + 1] = o end
  for _, o in ipairs(task.options or {}) do flags[#flags + 1] = o end
  out.flags = table.concat(flags, " ") .. " -shared -fPIC"
  for _, o in ipairs(flags) do if o == "-fopenmp" then out.openmp = true end end
  return out
end

-- Resources per kernel (numbers only; the worker reports part of them): an entry is
-- named only when it is the task's entry or an identifier of the candidate's source.
local function resources_text(res, source, task)
  if type(res) ~= "table" or next(res) == nil then return false end
  local out, k = {}, 0
  for _, entry in ipairs(util.sorted_keys(res)) do
    local r = res[entry]
    if type(r) == "table" then
      k = k + 1
      local name = tostring(entry)
      local known = (task and name == task.entry) or (name:match("^[%a_][%w_]*$") and #name <= 64 and type(source) == "string"
        and source:find("%f[%w_]" .. name .. "%f[^%w_]"))
      if not known then name = "kernel " .. k end
      local parts = {}
      local regs = int(r.num_regs) or int(r.registers)
      if regs then parts[#parts + 1] = regs .. " registers/thread" end
      if int(r.static_smem) then parts[#parts + 1] = bytes_text(r.static_smem) .. " static shared" end
      if int(r.dynamic_smem) and r.dynamic_smem > 0 then parts[#parts + 1] = bytes_text(r.dynamic_smem) .. " dynamic shared" end
      if int(r.local_bytes) then parts[#parts + 1] = bytes_text(r.local_bytes) .. " local (spills)" end
      if int(r.spill_stores) and r.spill_stores > 0 then parts[#parts + 1] = int(r.spill_stores) .. " B spill stores" end
      if int(r.max_threads) then parts[#parts + 1] = "at most " .. int(r.max_threads) .. " threads/block" end
      out[#out + 1] = "- " .. name .. ": " .. table.concat(parts, ", ")
    end
  end
  return #out > 0 and table.concat(out, "\n") or false
end

-- A candidate (parent or best): {source=, result=} or an eval result with source=.
local function cand_ctx(c, task)
  if not c then
    return { source = false, verdict = false, reason = false, compile_log = false, time_ms = false, ci = false,
      tflops = false, gbps = false, frac_peak = false, bound = false, resources = false, summary = false,
      profile = false }
  end
  local r = c.result or c
  local ci = type(r.ci_ms) == "table" and finite(r.ci_ms[1]) and finite(r.ci_ms[2]) and r.ci_ms
  return {
    source = c.source or false, verdict = verdict_name(r), reason = reason_text(r, task),
    compile_log = log_text(r.compile_log), time_ms = num(r.time_ms),
    ci = ci and string.format("[%.4g, %.4g] ms", ci[1], ci[2]) or false,
    tflops = num(r.tflops), gbps = num(r.gbps),
    frac_peak = finite(r.frac_peak) and string.format("%.1f%%", 100 * r.frac_peak) or false, bound = bound_name(r.bound),
    resources = resources_text(r.resources, c.source, task), summary = summary(r, task),
    profile = require("kloop.eval.profile").prompt_text(r.profile),
  }
end

-- The GPU's facts when the caller has none yet (the first requests go out before the
-- worker has started): one forked probe per process (kloop.core.gpu.probe), false
-- where there is no GPU.
local gpu_probed
function M.gpu_fallback()
  if gpu_probed == nil then gpu_probed = require("kloop.core.gpu").probe(0) or false end
  return gpu_probed or nil
end

-- The context every template receives. raw: {task=, gpu=, parent=, best=, attempts=,
-- baseline=, note=, cpu= (M.cpu_facts, for tests)}; gpu = false: none, no probe. Every
-- field of the result is present (false when unknown), so a template's placeholders are
-- checked against one fixed schema.
function M.context(raw)
  raw = raw or {}
  local attempts = {}
  local list = raw.attempts or {}
  local first = math.max(1, #list - (raw.max_attempts or 8) + 1)
  for i = first, #list do
    local a = list[i]
    local r = a.result or a
    attempts[#attempts + 1] = string.format("- #%d %s%s", i, a.label and (a.label .. ": ") or "", summary(r, raw.task) or "?")
  end
  local baseline = raw.baseline and (raw.baseline.result or raw.baseline)
  -- the baseline is timed while the first requests are out: its time is not known yet
  local pending = raw.task ~= nil and not (baseline and baseline.verdict)
  local gpu = raw.gpu
  if gpu == nil and raw.task and raw.task.backend ~= "host" then gpu = M.gpu_fallback() end
  return {
    task = task_ctx(raw.task),
    gpu = gpu_ctx(gpu, raw.task),
    host = host_ctx(raw.task, raw.cpu),
    baseline_pending = pending,
    parent = cand_ctx(raw.parent, raw.task),
    best = raw.best and cand_ctx(raw.best, raw.task) or false,
    baseline_ms = baseline and num(baseline.time_ms) or false,
    attempts = #attempts > 0 and table.concat(attempts, "\n") or false,
    note = raw.note or false,
  }
end

return M
