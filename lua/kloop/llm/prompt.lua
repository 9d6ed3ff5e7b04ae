-- kloop.llm.prompt: prompt templates (prompts/*.txt): loading, versions, the context they see, rendering.
--
-- A template is plain text. `{{a.b}}` is replaced by a value of the context;
-- `{{#a.b}} ... {{/a.b}}` keeps its body only when the value is present (not false,
-- not ""), `{{^a.b}} ... {{/a.b}}` only when it is absent; `{{! note }}` is dropped.
-- A section tag alone on its line takes the line with it. A line holding a
-- placeholder whose value is absent is left out whole, so no fact ever renders as a
-- gap or a "(none)": a template puts each optional fact on its own line (or in a
-- section). A line `=== system ===` / `=== user ===` starts that message. The id of a
-- template is its file name without .txt, its version the kl_hash64 hex of its bytes,
-- so every call records exactly which text produced it. A template `ID` with a
-- sibling `ID_host.txt` is a pair: host (C) tasks get the sibling's text, and the
-- version is the hash of both texts.
-- Failure behaviour: unknown templates and unknown placeholders return nil, message
-- (every unknown placeholder is listed); nothing here raises on bad input.
local core = require("kloop.core.ffi")
local util = require("kloop.util")
local C = core.C

local M = {}

-- Folders searched for templates, first match wins.
function M.dirs(opts)
  local out = {}
  if opts and opts.prompts_dir then out[#out + 1] = opts.prompts_dir end
  local env = os.getenv("KLOOP_PROMPTS")
  if env and env ~= "" then out[#out + 1] = env end
  local ok, native = pcall(require, "kloop.native")
  if ok and native.source_dir and native.source_dir ~= "" then out[#out + 1] = native.source_dir .. "/prompts" end
  local exe = core.exe_path()
  if exe then
    local bin = util.dirname(exe)
    out[#out + 1] = bin .. "/../prompts"
    out[#out + 1] = bin .. "/../share/kloop/prompts"
  end
  return out
end

function M.version_of(text)
  return util.hex64(C.kl_hash64(text, #text, 0))
end

-- Loads a template by id (or a path ending in .txt): {id, version, text, path}.
function M.load(id, opts)
  if type(id) ~= "string" or id == "" then return nil, "prompt id must be a non-empty string" end
  local candidates = {}
  if id:match("%.txt$") then
    candidates[1] = id
  else
    if not id:match("^[%w_%-]+$") then return nil, "bad prompt id '" .. id .. "' (letters, digits, _ and -)" end
    for _, d in ipairs(M.dirs(opts)) do candidates[#candidates + 1] = d .. "/" .. id .. ".txt" end
  end
  for _, path in ipairs(candidates) do
    local text = util.read_file(path)
    if text then
      local tpl = { id = util.basename(path):gsub("%.txt$", ""), version = M.version_of(text), text = text, path = path }
      -- the host (C) variant of the same request, beside it; one version for the pair
      local hpath = path:gsub("%.txt$", "_host.txt")
      local htext = not path:match("_host%.txt$") and util.read_file(hpath)
      if htext then
        tpl.host = { id = tpl.id .. "_host", version = M.version_of(htext), text = htext, path = hpath }
        tpl.version = M.version_of(text .. "\0" .. htext)
      end
      return tpl
    end
  end
  return nil, string.format("no prompt template '%s' (looked in %s)", id,
    table.concat(M.dirs(opts), ", "))
end

-- Ids of the templates found, sorted.
function M.list(opts)
  local seen, out = {}, {}
  for _, d in ipairs(M.dirs(opts)) do
    local p = io.popen("ls " .. util.shell_quote(d) .. " 2>/dev/null")
    if p then
      for name in p:lines() do
        local id = name:match("^([%w_%-]+)%.txt$")
        if id and not seen[id] then seen[id] = true out[#out + 1] = id end
      end
      p:close()
    end
  end
  table.sort(out)
  return out
end

-- Looks a dotted path up; returns found, value.
local function lookup(ctx, path)
  local v = ctx
  for part in path:gmatch("[^%.]+") do
    if v == false then return true, false end
    if type(v) ~= "table" then return false end
    local n = tonumber(part)
    local nv = v[part]
    if nv == nil and n then nv = v[n] end
    if nv == nil then return false end
    v = nv
  end
  return true, v
end

local function present(v)
  return v ~= nil and v ~= false and v ~= "" and not (type(v) == "table" and next(v) == nil)
end

local function fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
    return string.format("%.4g", v)
  end
  if type(v) == "table" then
    local parts = {}
    for _, x in ipairs(v) do parts[#parts + 1] = fmt_value(x) end
    return table.concat(parts, "\n")
  end
  -- a multi-line value (a source file) ends where its line ends
  return (tostring(v):gsub("\n+$", ""))
end

local SECTION_LINE = "^[ \t]*({{[#%^/][%w_%.]+}})[ \t]*$"

-- Renders text with ctx: string, or nil, "unknown placeholder(s) ...". Every name of
-- the template is checked, in shown and hidden sections alike; a name under a value
-- that is false (a section without data, such as best before there is one) is absent,
-- not unknown.
function M.render(text, ctx)
  local unknown, seen = {}, {}
  local function note(name)
    if not seen[name] then seen[name] = true unknown[#unknown + 1] = "{{" .. name .. "}}" end
  end
  text = text:gsub("{{!.-}}\n?", "")
  for name in text:gmatch("{{[#%^/]?%s*([%w_%.]+)%s*}}") do
    if not lookup(ctx, name) then note(name) end
  end
  if #unknown > 0 then
    return nil, "unknown placeholder" .. (#unknown > 1 and "s " or " ") .. table.concat(unknown, ", ")
  end
  -- standalone section tags lose their line; inline ones stay in theirs
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local tag = line:match(SECTION_LINE)
    lines[#lines + 1] = tag or (line .. "\n")
  end
  text = table.concat(lines):gsub("\n$", "")
  local function sections(s)
    -- innermost names are distinct, so a non-greedy match is enough
    return (s:gsub("{{([#%^])([%w_%.]+)}}(.-){{/%2}}", function(kind, name, body)
      local _, v = lookup(ctx, name)
      local show = present(v)
      if kind == "^" then show = not show end
      return show and sections(body) or ""
    end))
  end
  text = sections(text)
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local missing = false
    local filled = line:gsub("{{%s*([%w_%.]+)%s*}}", function(name)
      local _, v = lookup(ctx, name)
      if not present(v) then missing = true return "" end
      return fmt_value(v)
    end)
    if not missing then out[#out + 1] = filled end
  end
  -- a dropped line leaves no run of blank lines behind
  return (table.concat(out, "\n"):gsub("\n[ \t]*\n[ \t]*\n+", "\n\n"))
end

-- Renders a template into chat messages: {{role=, content=}...}, or nil, err.
function M.messages(tpl, ctx)
  local variant = tpl.host and ctx and type(ctx.task) == "table" and ctx.task.backend == "host" and tpl.host or tpl
  local text, err = M.render(variant.text, ctx)
  if not text then return nil, (tpl.id or "prompt") .. ": " .. err end
  local msgs, role, buf = {}, "user", {}
  local function flush()
    local content = table.concat(buf, "\n"):gsub("^%s+", ""):gsub("%s+$", "")
    if content ~= "" then msgs[#msgs + 1] = { role = role, content = content } end
    buf = {}
  end
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local r = line:match("^===%s*(%a+)%s*===%s*$")
    if r == "system" or r == "user" or r == "assistant" then
      flush()
      role = r
    else
      buf[#buf + 1] = line
    end
  end
  flush()
  if #msgs == 0 then return nil, (tpl.id or "prompt") .. ": renders to nothing" end
  return msgs
end

-- ---- the context templates receive ----

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end
local function int(v) return finite(v) and v == math.floor(v) and math.abs(v) < 2 ^ 53 and string.format("%d", v) or nil end
local function real(v, fmt) return finite(v) and string.format(fmt or "%.3g", v) or nil end

local function num(v, fmt)
  if not finite(v) then return false end
  return string.format(fmt or "%.4g", v)
end

-- "M=4096, N=4096, K=4096": size names in the order of the kernel's arguments, then the rest.
local function sizes_text(s, task)
  if type(s) ~= "table" then return false end
  local parts, seen = {}, {}
  for _, a in ipairs(task and task.args or {}) do
    if a.name and s[a.name] ~= nil and not seen[a.name] then
      seen[a.name] = true
      parts[#parts + 1] = a.name .. "=" .. tostring(s[a.name])
    end
  end
  for _, k in ipairs(util.sorted_keys(s)) do
    if not seen[k] then parts[#parts + 1] = k .. "=" .. tostring(s[k]) end
  end
  return table.concat(parts, ", ")
end

local function bytes_text(b)
  if type(b) ~= "number" then return false end
  if b >= 1048576 then return string.format("%.4g MiB", b / 1048576) end
  if b >= 1024 then return string.format("%.4g KiB", b / 1024) end
  return string.format("%d B", b)
end

-- The entry's signature, read from the task's kernel.
local function signature(task)
  local ok, taskmod = pcall(require, "kloop.eval.task")
  if task.source and ok then
    local params = taskmod.kernel_params(task.source, task.entry, task.backend == "host")
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
    local ok, p = pcall(function() return require("kloop.eval.evaluator").peaks(gpu, task and task.unit) end)
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

-- ---- verdict evidence: what a result may tell a model ----
--
-- A runtime result comes back from the worker, which ran the candidate's code in its
-- own process: a host candidate could read a secret and put it into its reason, its
-- output or any string field of the reply. So for runtime verdicts the text a model
-- sees is written here, from the verdict name and the numbers of result.evidence;
-- strings are used only when they are one of the task's own names (argument, size,
-- case label). Free-form reasons and output tails never reach a prompt. Compile
-- verdicts are the compiler's (and kloop's fences') words about the candidate's own
-- source, made in kloop's process: kept, bounded, with absolute paths removed.

local VERDICTS = { ok = true, wrong = true, nan = true, unwritten = true, inputs_modified = true,
  nondeterministic = true, too_fast = true, crashed = true, launch_error = true, timeout = true,
  compile_error = true, rejected = true, not_run = true }
local COMPILE_VERDICTS = { compile_error = true, rejected = true }
M.LOG_MAX_BYTES = 4096
M.COMPILE_REASON_MAX_BYTES = 600

local SIGNALS = { [4] = "SIGILL", [5] = "SIGTRAP", [6] = "SIGABRT", [7] = "SIGBUS", [8] = "SIGFPE", [9] = "SIGKILL",
  [11] = "SIGSEGV", [24] = "SIGXCPU", [25] = "SIGXFSZ", [31] = "SIGSYS" }
-- CUDA errors a launch or copy reports; only these names are passed on
local CUDA_ERRORS = { "ILLEGAL_ADDRESS", "MISALIGNED_ADDRESS", "ILLEGAL_INSTRUCTION", "INVALID_PC", "HARDWARE_STACK_ERROR",
  "LAUNCH_OUT_OF_RESOURCES", "LAUNCH_TIMEOUT", "LAUNCH_FAILED", "INVALID_VALUE", "OUT_OF_MEMORY", "ASSERT",
  "INVALID_IMAGE", "INVALID_PTX", "NO_BINARY_FOR_GPU", "NOT_FOUND", "INVALID_HANDLE", "ILLEGAL_STATE",
  "COOPERATIVE_LAUNCH_TOO_LARGE", "UNSUPPORTED_PTX_VERSION", "SHARED_OBJECT_INIT_FAILED" }


local function task_names(task)
  local args, sizes = {}, {}
  for _, a in ipairs(task and task.args or {}) do
    if type(a.name) == "string" then args[a.name] = true end
  end
  local s = task and task.sizes
  for _, set in ipairs(s and { s.bench, unpack(s.check or {}) } or {}) do
    if type(set) == "table" then for k in pairs(set) do sizes[k] = true end end
  end
  return args, sizes
end

-- "M=67, N=45" from an evidence size table: task size names with integer values only.
local function ev_size(size, task)
  if type(size) ~= "table" then return nil end
  local _, names = task_names(task)
  local kept = {}
  for k, v in pairs(size) do
    if type(k) == "string" and names[k] and int(v) then kept[k] = int(v) end
  end
  return next(kept) and sizes_text(kept, task) or nil
end

-- Where a failure was seen: "C (check1: M=67, N=45, K=33; input set 2, repeat run)".
local function ev_where(ev, task)
  local args = task_names(task)
  local arg = type(ev.arg) == "string" and args[ev.arg] and ev.arg or nil
  local case = type(ev.case) == "string" and (ev.case == "bench" or ev.case:match("^check%d+$")) and ev.case or nil
  local size = ev_size(ev.size, task)
  local inner = {}
  if case then inner[#inner + 1] = case .. (size and (": " .. size) or "") end
  if int(ev.set) then inner[#inner + 1] = "input set " .. int(ev.set) end
  if ev.phase == "repeat" then inner[#inner + 1] = "repeat run" end
  local where = arg or "an output"
  if #inner > 0 then where = where .. " (" .. table.concat(inner, "; ") .. ")" end
  return where, arg, case
end

local function bounded(s, max)
  if #s <= max then return s end
  return s:sub(1, max) .. string.format("\n... (%d more bytes)", #s - max)
end

local function path_fenced(s)
  return require("kloop.eval.compile").filter_log(s)
end

-- The reason a model is shown for a result: built from the verdict and its evidence
-- (runtime verdicts) or the compiler's bounded words (compile verdicts); false for none.
local function reason_text(r, task)
  local v = r.verdict
  if not VERDICTS[v] then return false end
  local ev = type(r.evidence) == "table" and r.evidence or {}
  if COMPILE_VERDICTS[v] then
    if type(r.reason) ~= "string" or r.reason == "" then return false end
    return bounded(path_fenced(r.reason), M.COMPILE_REASON_MAX_BYTES)
  end
  local where = ev_where(ev, task)
  local idx = int(ev.index)
  local at = idx and (" (first at element " .. idx .. ")") or ""
  if v == "ok" then
    return int(r.reps) and ("verified; timed " .. int(r.reps) .. " repetitions") or "verified"
  elseif v == "too_fast" then
    return string.format("median %s ms is below the physical floor%s (max of flops/peak and bytes/bandwidth)",
      real(r.time_ms, "%.4g") or "?", real(r.floor_ms, "%.4g") and (" " .. real(r.floor_ms, "%.4g") .. " ms") or "")
  elseif v == "wrong" or (v == "nondeterministic" and ev.rel_err ~= nil) then
    local parts = { where .. ":" }
    if real(ev.rel_err) then parts[#parts + 1] = "relative error " .. real(ev.rel_err) end
    local lim = task and task.tolerance and real(task.tolerance.rel)
    if lim then parts[#parts + 1] = "(limit " .. lim .. ")" end
    local s = table.concat(parts, " ")
    if int(ev.bad) then s = s .. ", " .. int(ev.bad) .. " elements off" end
    if idx and real(ev.out, "%.9g") and real(ev.ref, "%.9g") then
      s = s .. string.format("; worst at element %s: %s vs %s (reference)", idx, real(ev.out, "%.9g"), real(ev.ref, "%.9g"))
    end
    if v == "nondeterministic" then s = "two runs on the same inputs differ; " .. s end
    return s
  elseif v == "nondeterministic" then
    return "two runs on the same inputs differ: " .. where .. at
  elseif v == "unwritten" then
    return string.format("%s elements of %s were never written%s", int(ev.count) or "some", where, at)
  elseif v == "nan" then
    return string.format("%s NaN/Inf elements in %s where the reference is finite%s", int(ev.count) or "some", where, at)
  elseif v == "inputs_modified" then
    return "an input was changed by the kernel: " .. where .. at
  elseif v == "crashed" then
    if ev.resumed == true then return "kloop itself stopped while this candidate was being evaluated" end
    local sig = type(r.reason) == "string" and tonumber(r.reason:match("signal (%d+)"))
    if sig == 31 then return "the sandbox stopped a forbidden system call (signal 31, SIGSYS): exec, fork, socket, file write or kill" end
    local s = "the process running the candidate died"
    if sig and SIGNALS[sig] then s = s .. string.format(" (signal %d, %s)", sig, SIGNALS[sig]) end
    return s
  elseif v == "timeout" then
    local secs = type(r.reason) == "string" and tonumber(r.reason:match("within (%d+%.?%d*) s"))
    return "no answer " .. (secs and string.format("within %g s", secs) or "before the deadline") .. ": the worker was killed"
  elseif v == "launch_error" then
    local s = "a launch failed or the launch plan is invalid (check the `// kloop: launch` lines)"
    local case = select(3, ev_where(ev, task))
    if case then s = s .. " on " .. case end
    if type(r.reason) == "string" then
      for _, name in ipairs(CUDA_ERRORS) do
        if r.reason:find("CUDA_ERROR_" .. name, 1, true) then return s .. ": CUDA_ERROR_" .. name end
      end
    end
    return s
  elseif v == "not_run" then
    return "not run (the other candidate of the comparison failed)"
  end
  return false
end
M.reason_text = reason_text

-- Keeps the useful part of a compile log: errors and warnings first, at most max
-- lines and M.LOG_MAX_BYTES bytes, absolute paths removed.
local function log_text(log, max)
  if type(log) ~= "string" or log:match("^%s*$") then return false end
  log = path_fenced(log)
  if log:match("^%s*$") then return false end
  max = max or 40
  local lines = {}
  for line in (log .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("%S") then lines[#lines + 1] = line end
  end
  if #lines > max then
    local keep = {}
    for _, l in ipairs(lines) do
      if #keep < max and (l:lower():find("error", 1, true) or l:lower():find("warning", 1, true)) then keep[#keep + 1] = l end
    end
    if #keep == 0 then for i = 1, max do keep[i] = lines[i] end end
    keep[#keep + 1] = string.format("... (%d more lines)", #lines - #keep)
    lines = keep
  end
  return bounded(table.concat(lines, "\n"), M.LOG_MAX_BYTES)
end

-- The first error line of a compile log, bounded (attempt lines and summaries).
local function first_error(log)
  local text = log_text(log, 1000)
  if not text then return nil end
  for line in text:gmatch("[^\n]+") do
    if line:lower():find("error", 1, true) then
      line = line:gsub("^%s+", "")
      return #line > 200 and (line:sub(1, 200) .. "...") or line
    end
  end
end

local function verdict_name(r)
  if not r or r.verdict == nil then return false end
  return VERDICTS[r.verdict] and r.verdict or "invalid"
end

local function bound_name(b) return (b == "compute" or b == "memory") and b or false end

local function summary(r, task)
  if not r or not r.verdict then return false end
  local s = verdict_name(r)
  if finite(r.time_ms) then s = s .. string.format(", %.4g ms", r.time_ms) end
  if finite(r.tflops) then s = s .. string.format(", %.4g TFLOP/s", r.tflops) end
  if finite(r.gbps) then s = s .. string.format(", %.4g GB/s", r.gbps) end
  if finite(r.frac_peak) then
    s = s .. string.format(", %.1f%% of peak (%s-bound)", 100 * r.frac_peak, bound_name(r.bound) or "?")
  end
  local why = r.verdict ~= "ok" and reason_text(r, task)
  if why then s = s .. ": " .. why end
  -- a compile error says what the compiler said, not only that it failed
  local first = r.verdict == "compile_error" and first_error(r.compile_log)
  if first then s = s .. " (" .. first .. ")" end
  return s
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
-- worker has started): one forked probe per process (kloop.core.gpu_probe), false
-- where there is no GPU.
local gpu_probed
function M.gpu_fallback()
  if gpu_probed == nil then gpu_probed = core.gpu_probe(0) or false end
  return gpu_probed or nil
end

-- The context every template receives. raw: {task=, gpu=, parent=, best=, attempts=,
-- baseline=, note=, cpu= (M.cpu_facts, for tests)}; gpu = false: none, no probe. Every field of the result is present (false when unknown), so a
-- template's placeholders are checked against one fixed schema.
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
