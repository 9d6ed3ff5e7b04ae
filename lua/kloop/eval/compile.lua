-- kloop.eval.compile: NVRTC straight to a cubin, in parallel children with a deadline,
-- through a content-addressed cache, with includes and options fenced in.
local cffi = require("kloop.core.ffi")
local nvrtc = require("kloop.core.nvrtc")
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local M = {}

-- compilers at once: one per CPU this process may use (NVRTC runs in child processes),
-- at least 2, at most 32
M.default_parallel = math.max(2, math.min(32, sys.cpu_count()))
M.default_deadline = 60 -- seconds per compile; a template or unroll bomb ends here

-- Options a task or candidate may pass. Everything else is refused: -rdc would allow
-- device-side launches, -I/--pre-include would reach host files, -G changes timing.
local allowed_options = {
  "^%-%-use_fast_math$", "^%-use_fast_math$", "^%-%-fmad=[a-z]+$", "^%-fmad=[a-z]+$",
  "^%-%-ftz=[a-z]+$", "^%-%-prec%-div=[a-z]+$", "^%-%-prec%-sqrt=[a-z]+$",
  "^%-%-extra%-device%-vectorization$", "^%-%-maxrregcount=%d+$", "^%-maxrregcount=%d+$",
  "^%-std=c%+%+%d+$", "^%-%-std=c%+%+%d+$", "^%-D[%a_][%w_]*=?[%w_%.%-]*$",
  "^%-O[0-3]$", "^%-%-restrict$", "^%-lineinfo$", "^%-%-dopt=on$",
}

function M.check_option(opt)
  for _, pat in ipairs(allowed_options) do
    if opt:match(pat) then return true end
  end
  return nil, "option '" .. opt .. "' is not allowed (allowed: fast-math, fmad/ftz/prec, maxrregcount, -std, -D, -O)"
end

-- Scans #include directives. Returns the list of quoted names (to be read from the
-- task's folder), or nil, why. NVRTC would otherwise read any absolute host path and
-- echo its content into the log, and logs go to the LLM.
local function scan_includes(source)
  local s = source:gsub("\\\r?\n", "")                          -- line continuations
  s = s:gsub("%%:", "#"):gsub("%?%?=", "#")                     -- digraph and trigraph #
  local quoted = {}
  local n = 0
  for line in s:gmatch("[^\n]*") do
    n = n + 1
    local l = line:gsub("/%*.-%*/", " ")
    local directive = l:match("^%s*#%s*([%a_]+)")
    if directive == "include" or directive == "include_next" or directive == "import" or directive == "embed" then
      if directive ~= "include" then return nil, string.format("line %d: #%s is not allowed", n, directive) end
      local q = l:match('^%s*#%s*include%s*"([^"]+)"%s*$') or l:match('^%s*#%s*include%s*"([^"]+)"%s*//')
      local a = l:match("^%s*#%s*include%s*<([^>]+)>%s*$") or l:match("^%s*#%s*include%s*<([^>]+)>%s*//")
      local name = q or a
      if not name then return nil, string.format("line %d: only #include \"file\" or <header> is allowed", n) end
      if name:sub(1, 1) == "/" or name:find("%.%.") or name:find("\\") or name:find("~") then
        return nil, string.format("line %d: #include of '%s' is refused (absolute paths and .. are not allowed)", n, name)
      end
      if q then quoted[#quoted + 1] = name end
    elseif l:find("__has_include", 1, true) and (l:find('"/', 1, true) or l:find("</", 1, true) or l:find("%.%.")) then
      return nil, string.format("line %d: __has_include of a host path is refused", n)
    end
  end
  return quoted
end

-- A few sources' scans and comment-stripped code, kept: a tune compiles one source under
-- many -D sets, and the driver asks for each candidate's jobs several times (queued as a
-- guess, counted, compiled, evaluated); a scan is about 0.1 ms of Lua per ask.
local memo = { n = 0, scans = {}, extern_c = {} }
local MEMO_MAX = 8
local function remember(tbl, source, value)
  if memo.n >= MEMO_MAX then memo.n, memo.scans, memo.extern_c = 0, {}, {} end
  if memo.scans[source] == nil and memo.extern_c[source] == nil then memo.n = memo.n + 1 end
  tbl[source] = value
  return value
end

function M.scan_includes(source)
  local hit = memo.scans[source]
  if hit == nil then
    local quoted, why = scan_includes(source)
    hit = remember(memo.scans, source, quoted and { quoted = quoted } or { why = why })
  end
  if not hit.quoted then return nil, hit.why end
  local copy = {}
  for i, q in ipairs(hit.quoted) do copy[i] = q end
  return copy
end

-- Appends a candidate's compiler options to options, each passed by check (the
-- compiler's own fence): true, or nil, the first refusal.
function M.add_options(options, list, check)
  for _, o in ipairs(list or {}) do
    local ok, err = check(o)
    if not ok then return nil, err end
    options[#options + 1] = o
  end
  return true
end

-- Appends -DNAME=VALUE options, refusing anything that is not a plain name and value.
function M.add_defines(options, defines)
  for _, k in ipairs(util.sorted_keys(defines or {})) do
    local v = tostring(defines[k])
    if not tostring(k):match("^[%a_][%w_]*$") or not v:match("^[%w_%.%-]+$") then
      return nil, "bad define " .. tostring(k) .. "=" .. v
    end
    options[#options + 1] = "-D" .. k .. "=" .. v
  end
  return true
end

-- An entry that needs NVRTC's name expressions: a template instance or a qualified
-- name ("gemm<128, 8>", "ns::scale"), or any entry of a source without extern "C"
-- (plain C++ linkage mangles every name).
function M.needs_lowering(entry, src)
  if entry:find("[<:]") then return true end
  if src == nil then return false end
  local has = memo.extern_c[src]
  if has == nil then
    local code = src:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
    has = remember(memo.extern_c, src, code:find('extern%s*"C"') ~= nil)
  end
  return not has
end

-- The name expression of an entry: parameters (then the source's numeric #defines)
-- substituted for the names they define, then fenced to identifier characters, digits,
-- <, >, commas, spaces and ::, since NVRTC compiles the expression as C++.
function M.name_expression(entry, defines, src)
  if type(entry) ~= "string" or #entry == 0 or #entry > 200 then return nil, "entry must be a short kernel name" end
  local own = {}
  for name, v in (src or ""):gmatch("#%s*define%s+([%a_][%w_]*)%s+([%w_%.%-]+)%s*\n") do own[name] = v end
  local expr = entry:gsub("[%a_][%w_]*", function(w)
    local v = defines and defines[w]
    if v ~= nil then return tostring(v) end
    return own[w]
  end)
  if expr:find("[^%w_<>, :]") or expr:gsub("::", ""):find(":") then
    return nil, string.format("entry '%s' is not a kernel name (allowed: letters, digits, _, <, >, commas, spaces, ::)", entry)
  end
  return expr
end

-- The cache key of a build: two 64-bit hashes of everything that shapes the binary.
function M.content_key(parts)
  local blob = table.concat(parts, "\0")
  return sys.content_hash(blob)
end

function M.cache_dir()
  local d = os.getenv("KLOOP_CACHE")
  if not d or d == "" then
    local base = os.getenv("XDG_CACHE_HOME")
    if not base or base == "" then base = (os.getenv("HOME") or "/tmp") .. "/.cache" end
    d = base .. "/kloop"
  end
  -- absolute: workers load from here, and a sandboxed host worker may not ask for its
  -- working folder (getcwd is outside its allow-list)
  if d:sub(1, 1) ~= "/" then
    local cwd = os.getenv("PWD")
    if not cwd or cwd == "" then cwd = util.capture("pwd"):gsub("%s+$", "") end
    d = cwd .. "/" .. d
  end
  return d .. "/cubin"
end

-- Parses ptxas -v lines of the log: per entry registers, spills, stack, smem.
function M.parse_resources(log)
  local res, cur = {}, nil
  for line in (log or ""):gmatch("[^\n]+") do
    local fn = line:match("Compiling entry function '([^']+)'")
    if fn then
      cur = { registers = 0, spill_stores = 0, spill_loads = 0, stack_bytes = 0, static_smem = 0, const_bytes = 0 }
      res[fn] = cur
    elseif cur then
      local st, ss, sl = line:match("(%d+) bytes stack frame, (%d+) bytes spill stores, (%d+) bytes spill loads")
      if st then cur.stack_bytes, cur.spill_stores, cur.spill_loads = tonumber(st), tonumber(ss), tonumber(sl) end
      local regs = line:match("Used (%d+) registers")
      if regs then cur.registers = tonumber(regs) end
      local smem = line:match("(%d+) bytes smem")
      if smem then cur.static_smem = tonumber(smem) end
      local cmem = line:match("(%d+) bytes cmem%[0%]")
      if cmem then cur.const_bytes = tonumber(cmem) end
    end
  end
  return res
end

-- The sections of an ELF64 image (a cubin, a host .so), from its section headers:
-- {name, type, flags, offset, size} each; nil, why when it is not an ELF64 image.
function M.elf_sections(image)
  if type(image) ~= "string" or #image < 64 or image:sub(1, 5) ~= "\127ELF\2" then return nil, "not an ELF64 image" end
  local p = require("ffi").cast("const uint8_t*", image)
  local function u16(o) return p[o] + 256 * p[o + 1] end
  local function u32(o) return u16(o) + 65536 * u16(o + 2) end
  local function u64(o) return u32(o) + 4294967296 * u32(o + 4) end
  local shoff, shentsize, shnum, shstrndx = u64(0x28), u16(0x3A), u16(0x3C), u16(0x3E)
  if shentsize < 64 or shoff + shnum * shentsize > #image or shstrndx >= shnum then return nil, "bad section table" end
  local stroff = u64(shoff + shstrndx * shentsize + 24)
  local out = {}
  for k = 0, shnum - 1 do
    local h = shoff + k * shentsize
    local nameoff = stroff + u32(h)
    out[#out + 1] = { name = nameoff < #image and image:match("^[^%z]*", nameoff + 1) or "", type = u32(h + 4),
      flags = u64(h + 8), offset = u64(h + 24), size = u64(h + 32) }
  end
  return out
end

-- Bytes of static device data (__device__ variables: .nv.global and .nv.global.init)
-- in a cubin, read from its ELF section headers; nil, why when it is not an ELF64 image.
function M.static_data_bytes(image)
  local secs, why = M.elf_sections(image)
  if not secs then return nil, why end
  local total = 0
  for _, sec in ipairs(secs) do
    if sec.name == ".nv.global" or sec.name == ".nv.global.init" then total = total + sec.size end
  end
  return total
end

-- The loaded image of a binary (a cubin, a host .so), as a hex id: the names and
-- contents of its sections that are loaded (SHF_ALLOC with data: code, constants,
-- tables) and a cubin's kernel attributes (.nv.info*), not its notes (a build id) nor
-- what is never loaded (symbol tables, which name the source file). Two sources that
-- differ only in comments or names of locals compile to the same id. Not an ELF64
-- image: the id of its bytes.
function M.image_id(image)
  if type(image) ~= "string" then return nil end
  local secs = M.elf_sections(image)
  if not secs then return sys.content_hash(image) end
  local parts = {}
  for _, sec in ipairs(secs) do
    -- (SHF_ALLOC = 2; SHT_NOBITS = 8 has no bytes: its size still counts; and a cubin's
    -- .nv.info sections, never loaded but read by the driver at the launch: register
    -- counts, launch bounds, cluster dimensions)
    if (sec.flags % 4 >= 2 and sec.name:sub(1, 5) ~= ".note") or sec.name:sub(1, 8) == ".nv.info" then
      parts[#parts + 1] = sec.name .. "\0" .. sec.size .. "\0"
        .. (sec.type ~= 8 and image:sub(sec.offset + 1, sec.offset + sec.size) or "")
    end
  end
  return sys.content_hash(table.concat(parts, "\0"))
end

-- The log the user (and the LLM) sees: ptxas chatter removed, host paths hidden.
function M.filter_log(log)
  local out = {}
  for line in (log or ""):gmatch("[^\n]+") do
    if not line:match("^ptxas info") and not line:match("^ptxas%s+%.") then
      out[#out + 1] = (line:gsub("/[%w_%-%./]+/", ""))
    end
  end
  return table.concat(out, "\n")
end

-- Builds one compile job: returns job table or nil, why (a rejected candidate).
-- src: source text; opts: {arch=, defines={K=V}, options={...}, dir=task folder, name=}
function M.prepare(src, opts)
  local arch = opts.arch or "sm_90"
  if not arch:match("^sm_%d+a?$") then return nil, "arch must look like sm_90, got " .. tostring(arch) end
  local quoted, why = M.scan_includes(src)
  if not quoted then return nil, why end
  local headers = {}
  for _, name in ipairs(quoted) do
    local path = (opts.dir or ".") .. "/" .. name
    local text = util.read_file(path)
    if not text then return nil, "#include \"" .. name .. "\": not found in the task's folder" end
    local sub, swhy = M.scan_includes(text)
    if not sub then return nil, name .. ": " .. swhy end
    headers[#headers + 1] = { name = name, text = text }
  end
  local options = { "--gpu-architecture=" .. arch, "-std=c++17", "-lineinfo", "-Xptxas=-v",
    "-I" .. cffi.cuda_home() .. "/include" }
  local oko, oerr = M.add_options(options, opts.options, M.check_option)
  if not oko then return nil, oerr end
  local okd, derr = M.add_defines(options, opts.defines)
  if not okd then return nil, derr end
  -- C++ entries: name expressions in, lowered names out (job.lowered[entry])
  local exprs, entries, seen = {}, {}, {}
  for _, e in ipairs(opts.entries or {}) do
    if not seen[e] and M.needs_lowering(e, src) then
      seen[e] = true
      local x, xerr = M.name_expression(e, opts.defines, src)
      if not x then return nil, xerr end
      entries[#entries + 1], exprs[#exprs + 1] = e, x
    end
  end
  local nv = nvrtc.version() or "none"
  local keyparts = { "nvrtc " .. nv, src }
  for _, o in ipairs(options) do keyparts[#keyparts + 1] = o end
  for _, h in ipairs(headers) do keyparts[#keyparts + 1] = h.name .. "\0" .. h.text end
  for _, x in ipairs(exprs) do keyparts[#keyparts + 1] = "name " .. x end
  local key = M.content_key(keyparts)
  return { src = src, options = options, headers = headers, key = key, name = opts.name or "candidate.cu",
    entries = entries, name_exprs = exprs }
end

local function cache_paths(key)
  local dir = M.cache_dir()
  return dir, dir .. "/" .. key .. ".cubin", dir .. "/" .. key .. ".log", dir .. "/" .. key .. ".names"
end

-- job.lowered: entry as the task wrote it -> the name the module exports.
local function set_lowered(job, text)
  job.lowered = {}
  local i = 0
  for line in (text or ""):gmatch("([^\n]*)\n") do
    i = i + 1
    if job.entries[i] then job.lowered[job.entries[i]] = line end
  end
  return i == #(job.name_exprs or {})
end

-- What this process learnt of the binaries it compiled, by content key: the loaded
-- image's id, the static device data and the build's log. A background compile ends
-- while the worker runs another candidate; its evaluation (and every later ask: the
-- counts, an A/B, the sentinel) then finds them here instead of reading the binary and
-- its log back between two requests, where the GPU waits. The binary itself must still
-- be in the cache (the worker loads it from there).
local facts, nfacts = {}, 0
-- (entry -> {registers, spills, ...}: each job gets its own, as parse_resources gives)
local function copy_resources(res)
  local out = {}
  for entry, r in pairs(res or {}) do
    local c = {}
    for k, v in pairs(r) do c[k] = v end
    out[entry] = c
  end
  return out
end
M.FACTS_MAX = 20000
-- (another process's binaries, as in a run that starts on a warm cache: tests)
function M.forget_facts() facts, nfacts = {}, 0 end

-- known: the facts of this binary (cached: its log and resources from them, not parsed again)
local function finish(job, ok, log, cubin, seconds, cached, known)
  job.done = true
  job.ok = ok
  job.log = log or ""
  job.seconds = seconds
  job.cached = cached
  job.resources = known and copy_resources(known.resources) or M.parse_resources(job.log)
  job.image_facts = known
  job.cubin_path = ok and select(2, cache_paths(job.key)) or nil
  if cubin and ok then
    job.cubin_bytes = #cubin
    -- what an evaluation reads of the binary (its loaded image's id, its static device
    -- data), taken from the compiler's bytes as it ends: a background compile ends while
    -- the worker runs another candidate, so the evaluation need not read the file back
    -- between two requests (the GPU's wait). A cached binary has none: it is read then.
    job.image_facts = { id = M.image_id(cubin), static_data_bytes = M.static_data_bytes(cubin), log = job.log,
      resources = copy_resources(job.resources) }
    if job.key then
      if nfacts >= M.FACTS_MAX then facts, nfacts = {}, 0 end
      if not facts[job.key] then nfacts = nfacts + 1 end
      facts[job.key] = job.image_facts
    end
  end
end

local function try_cache(job)
  local _, cpath, lpath, npath = cache_paths(job.key)
  local known = job.key and facts[job.key]
  if known and #(job.name_exprs or {}) == 0 and util.file_exists(cpath) then
    finish(job, true, known.log, nil, 0, true, known)
    return true
  end
  local log = util.read_file(lpath)
  if #(job.name_exprs or {}) > 0 and not set_lowered(job, util.read_file(npath)) then return false end
  if log and util.file_exists(cpath) then
    finish(job, true, log, nil, 0, true)
    return true
  end
  return M.try_shipped(job)
end

-- Keeps a build in the cache (the worker loads the binary from there): true, or nil,
-- msg when the cache cannot keep it (a full disk, a folder that cannot be written).
local function store(job, log, cubin, lowered)
  local dir, cpath, lpath, npath = cache_paths(job.key)
  util.mkdir_p(dir)
  -- (each through a temp file and a rename: a reader never sees half a cubin)
  local ok, err = true, nil
  if #(job.name_exprs or {}) > 0 then ok, err = util.replace_file(npath, lowered or "") end
  if ok then ok, err = util.replace_file(cpath, cubin) end
  if ok then ok, err = util.replace_file(lpath, log) end
  if not ok then
    -- (io's "PATH: why": the why)
    return nil, string.format("kloop's compile cache %s cannot keep the binary (%s): free space there, or set "
      .. "KLOOP_CACHE to a writable folder", dir, (tostring(err):gsub("^.*: ", "")))
  end
  return true
end

-- kloop's own kernels as the binary ships them (tools/own_kernels.lua, built for the
-- common archs by the NVRTC of the build): a job whose content key is one of them gets
-- that binary and its compile's log, written into the cache as its own compile would
-- have (the worker loads it from there). True where it did; false where the key is not
-- shipped (another NVRTC, another arch, a candidate) or the cache cannot keep it (then it
-- compiles, and its store says why).
local native_ok, native = pcall(require, "kloop.native")
function M.try_shipped(job)
  if not (native_ok and type(native) == "table" and native.own_binary) or not job.key then return false end
  local cubin, log = native.own_binary(job.key)
  if not cubin or #(job.name_exprs or {}) > 0 then return false end
  if not store(job, log, cubin, nil) then return false end
  finish(job, true, log, cubin, 0, true)
  job.shipped = true
  return true
end

-- The compilers' niceness, added to the parent's: below the worker and the driver, so a
-- batch compiling on every core never delays a launch or a sync's return (the GPU would
-- wait for the host); and a guess (a background compile of what may come next) below a
-- compile needed now (urgent: a batch about to run, or one in the foreground), which
-- starts at once beside the guesses running (kloop.eval.compile.run). A compiler still
-- takes every core the others leave idle. KLOOP_COMPILE_NICE=N (benches): N for all of
-- them, and no compile needed now starts beyond the slots, as before these priorities.
M.NICE, M.GUESS_NICE = 10, 19
M.FIXED_NICE = tonumber(os.getenv("KLOOP_COMPILE_NICE") or "")
local function nice_of(job)
  if M.FIXED_NICE then return M.FIXED_NICE end
  return (job.guess and not job.urgent) and M.GUESS_NICE or M.NICE
end

-- A job's -D options, as its compile lines in KLOOP_WAITS_LOG show them (benches).
local function defines_of(job)
  local defs = {}
  for _, o in ipairs(job.options or {}) do
    local d = type(o) == "string" and o:match("^%-D(.*)$")
    if d then defs[#defs + 1] = d end
  end
  return table.concat(defs, " ")
end

local function start(job)
  job.nice = nice_of(job)
  local h, err = nvrtc.start({ source = job.src, name = job.name, options = job.options, headers = job.headers,
    name_exprs = job.name_exprs, nice = job.nice })
  if not h then
    finish(job, false, err, nil, 0, false)
    job.error = err
    -- (benches: a compile that could not start is dropped here and compiled when asked)
    if os.getenv("KLOOP_WAITS_LOG") then
      require("kloop.eval.evaluator").waits_log("compile_start_failed " .. tostring(err) .. " " .. defines_of(job))
    end
    return false
  end
  job.cjob = h
  job.started = sys.now()
  return true
end

-- The wall times of the compiles that ended in this process (the last WALLS_KEPT, a
-- ring), as each child measured its compile (so a stretch where the driver read no
-- result, a library reference's timing, does not lengthen them): what
-- M.expected_left reads.
local walls, WALLS_KEPT = { n = 0 }, 256
function M.note_wall(seconds)
  walls.n = walls.n + 1
  walls[(walls.n - 1) % WALLS_KEPT + 1] = seconds
end
local function poll(job, wait_ms, deadline)
  local res, err = nvrtc.poll(job.cjob, wait_ms)
  if type(res) == "table" and type(res.seconds) == "number" then M.note_wall(res.seconds) end
  if res == "running" then
    if sys.now() - job.started > deadline then
      nvrtc.kill(job.cjob)
      finish(job, false, string.format("compile deadline exceeded (%.0f s): the compiler was stopped", deadline),
        nil, sys.now() - job.started, false)
      job.timeout = true
    end
    return
  end
  if not res then
    finish(job, false, err, nil, sys.now() - job.started, false)
    return
  end
  if job.entries then set_lowered(job, res.lowered) end
  if res.ok and res.cubin then
    local kept, kerr = store(job, res.log, res.cubin, res.lowered)
    if not kept then
      -- built, but no binary to load: kloop's failure, not the candidate's
      finish(job, false, kerr, nil, res.seconds, false)
      job.cache_error = kerr
      return
    end
  end
  finish(job, res.ok and res.cubin ~= nil, res.log, res.cubin, res.seconds, false)
end

-- Compiles in the background (M.run with opts.background): jobs started and not yet
-- read, and jobs waiting for a free slot, by cache key. A job is read when a
-- compile of the same key asks for it (M.compile waits for that one alone, then
-- M.pump reads the others that are done and starts queued ones in the freed slots). So
-- the compilers of a batch run while the worker evaluates the batch's first candidates;
-- a batch larger than the slots starts its rest as the first ones are waited for.
local bg = { running = {}, queue = {}, by_key = {}, parallel = M.default_parallel, deadline = M.default_deadline }
M.URGENT_RESERVE = 4
M.background = bg

-- Whether an urgent job may start now: fewer of them run than the slots (beside any
-- guesses, which yield the CPU to them: M.GUESS_NICE); with KLOOP_COMPILE_NICE set, fewer
-- compiles of any kind.
local function urgent_room()
  if M.FIXED_NICE then return #bg.running < bg.parallel end
  local n = 0
  for _, r in ipairs(bg.running) do if r.urgent then n = n + 1 end end
  return n < bg.parallel
end

-- A guess that is needed now (an urgent batch names it, an evaluation waits for it):
-- urgent from here, so it starts at the urgent niceness; already compiling, reniced to it
-- where the system allows (raising a priority needs the privilege; else it finishes as
-- a guess).
local function needed_now(job)
  if job.done or job.urgent then return end
  job.urgent = true
  if job.cjob and job.nice ~= M.NICE and not M.FIXED_NICE and nvrtc.renice(job.cjob, M.NICE) then job.nice = M.NICE end
end

-- A compile that ran into the deadline at the guesses' niceness: its wall time may be
-- mostly others' CPU time (urgent compiles beside it take the cores first), so its
-- timeout is not the candidate's verdict; an evaluation compiles it again.
local function starved(job)
  return job.timeout == true and job.nice == M.GUESS_NICE
end

local function bg_drop(job)
  if bg.by_key[job.key] == job then bg.by_key[job.key] = nil end
end

-- Reads the background jobs that are done (waiting wait_ms for the first), and starts
-- queued ones while slots are free. Returns how many are still running or queued.
-- (benches, KLOOP_WAITS_LOG: each background compile's end, how long it queued and ran)
local function log_done(job)
  if job.logged or not os.getenv("KLOOP_WAITS_LOG") then return end
  job.logged = true
  require("kloop.eval.evaluator").waits_log(string.format("compiled %.3f queued %.3f urgent %s ok %s %s",
    job.seconds or -1, job.started and job.queued_at and (job.started - job.queued_at) or -1,
    tostring(job.urgent or false), tostring(job.ok), defines_of(job)))
end

function M.pump(wait_ms)
  local still = {}
  for i, job in ipairs(bg.running) do
    poll(job, i == 1 and (wait_ms or 0) or 0, bg.deadline)
    if job.done then log_done(job) end
    if job.done then
      -- a binary is in the cache now; a failure is not cached, so it stays here for the
      -- evaluation that asks for it (else that one would compile it again, up to the
      -- deadline again), without its source
      if job.ok or starved(job) then bg_drop(job) else job.src = nil end
    else
      still[#still + 1] = job
    end
  end
  bg.running = still
  -- (queued jobs, guesses of what comes next, leave URGENT_RESERVE slots free where
  -- there are enough: a batch about to run then compiles on idle cores, not beside 16
  -- guesses at a fraction of the speed)
  -- (an urgent job, first in the queue, takes a slot of its own: up to the slots of them
  -- run, whatever guesses run beside them at their lower priority)
  local cap = bg.parallel >= 2 * M.URGENT_RESERVE and bg.parallel - M.URGENT_RESERVE or bg.parallel
  -- (and fewer while the worker starts: M.hold_guesses)
  if bg.guess_cap then cap = math.min(cap, bg.guess_cap) end
  while #bg.queue > 0 and (bg.queue[1].urgent and urgent_room() or #bg.running < cap) do
    local job = table.remove(bg.queue, 1)
    if start(job) then bg.running[#bg.running + 1] = job else bg_drop(job) end
  end
  return #bg.running + #bg.queue
end

-- While the worker's CUDA start runs (its hello not yet answered), at most n guesses
-- compile at once (nil: the usual cap again, and the queue started up to it). A
-- compiler beside it slows it: on the H200's host, 16 of them beside the start took its
-- hello from 0.28 to 0.41 s, and the candidates need not be ready before it.
function M.hold_guesses(n)
  bg.guess_cap = n
  if not n then M.pump(0) end
end

-- Waits for the background job of `key` (nil when there is none, or when it ran into the
-- deadline as a guess: the caller compiles it again, needed now): the job, done.
local function bg_wait(key)
  local job = bg.by_key[key]
  if not job then return nil end
  -- (what an evaluation that waits found: a guess still queued or still compiling)
  job.wait_state = job.done and "done" or (job.cjob and "compiling" or "queued")
  needed_now(job)
  for i, q in ipairs(bg.queue) do
    if q == job then
      table.remove(bg.queue, i)
      if start(job) then table.insert(bg.running, 1, job) end
      break
    end
  end
  while not job.done do
    if job.cjob and not job.done then poll(job, 20, bg.deadline) end
    if not job.done and not job.cjob then break end
  end
  if job.done and job.cjob then log_done(job) end
  local still = {}
  for _, r in ipairs(bg.running) do if r ~= job then still[#still + 1] = r end end
  bg.running = still
  bg_drop(job)
  M.pump(0)
  if starved(job) then return nil end
  return job
end

-- Whether a prepared job (M.prepare) is compiled (in the cache, or its background job
-- done) so that an evaluation of it waits for no compiler; reads the background jobs
-- that are done.
function M.ready(job)
  M.pump(0)
  local b = bg.by_key[job.key]
  if b then return b.done == true end
  return try_cache(job)
end

-- Whether a prepared job's build ended in the background and failed (a compile error, a
-- deadline): its evaluation would find that failure at once.
function M.failed(job)
  local b = bg.by_key[job.key]
  return b ~= nil and b.done == true and not b.ok
end

-- Whether a prepared job's build is pending in the background (queued, or compiling
-- and not yet read).
function M.pending(job)
  local b = bg.by_key[job.key]
  return b ~= nil and not b.done
end

-- The seconds the pending background compile of a cache key is expected to run still,
-- from the walls of the compiles that ended (note_wall): compiling for e seconds, the
-- mean of w - e over the walls past e; queued, the mean wall. 0 where the run cannot
-- tell (fewer than WALLS_MIN ended, or fewer than 2 ran longer than this one has: early
-- in a run the first to end are the light ones, and a heavy one looked endless beside
-- them, though it was about to end); nil where no compile of the key is pending. (A heavy
-- compile's tail: gemm_tiled's TM=16 TN=8 points take 1.5-3.7 s where most take 0.2-0.8
-- s, so one that has run past 1 s is likely to run a while longer.)
local WALLS_MIN = 8
function M.expected_left(key)
  local job = bg.by_key[key]
  if not job or job.done then return nil end
  local kept = math.min(walls.n, WALLS_KEPT)
  if kept < WALLS_MIN then return 0 end
  local e = job.cjob and job.started and (sys.now() - job.started) or nil
  local sum, n = 0, 0
  for i = 1, kept do
    local w = walls[i]
    if not e then sum, n = sum + w, n + 1
    elseif w > e then sum, n = sum + (w - e), n + 1 end
  end
  if n < 2 then return 0 end
  return sum / n
end

-- Forgets the walls seen (tests).
function M.forget_walls() walls.n = 0 end

-- Kills every background compile (an evaluator closing, the run ending).
function M.cancel_background()
  for _, job in ipairs(bg.running) do
    if job.cjob and not job.done then nvrtc.kill(job.cjob) end
  end
  bg.running, bg.queue, bg.by_key = {}, {}, {}
end

-- Compiles many prepared jobs, `parallel` at a time, each with its own deadline.
-- Every job ends with: ok, log, resources, cubin_path, seconds, cached, timeout.
-- opts.background: start them and return at once (the jobs are not done yet); a
-- later compile of the same source and options finds its job and waits for it.
-- opts.urgent (with background): start them now, queued ones included, up to the slots
-- (the guesses leave URGENT_RESERVE of them free), the rest first in the queue (a batch
-- about to run, where the queue holds guesses).
function M.run(jobs, opts)
  opts = opts or {}
  local parallel = opts.parallel or M.default_parallel
  local deadline = opts.deadline or M.default_deadline
  local queue, running, promote = {}, {}, {}
  for _, job in ipairs(jobs) do
    local b = bg.by_key[job.key]
    if b then -- already compiling in the background (or queued there)
      job.background = b
      if opts.urgent and not b.cjob and not b.done then promote[#promote + 1] = b end
      if opts.urgent and b.cjob then needed_now(b) end
    elseif opts.no_cache or not try_cache(job) then
      queue[#queue + 1] = job
    elseif opts.background and os.getenv("KLOOP_WAITS_LOG") then
      require("kloop.eval.evaluator").waits_log("cached " .. defines_of(job))
    end
  end
  if opts.background then
    bg.parallel, bg.deadline = parallel, deadline
    local urgent = {}
    for _, job in ipairs(queue) do
      if not bg.by_key[job.key] then -- (a key twice in one call: one job)
        bg.by_key[job.key] = job
        job.queued_at = sys.now()
        if os.getenv("KLOOP_WAITS_LOG") then
          require("kloop.eval.evaluator").waits_log(string.format("queued urgent %s %s", tostring(opts.urgent or false),
            defines_of(job)))
        end
        if opts.urgent then urgent[#urgent + 1] = job else job.guess = true bg.queue[#bg.queue + 1] = job end
      end
    end
    if opts.urgent then
      -- needed now: the queued guesses it names join it; all of them start at once up to
      -- the slots (the guesses keep URGENT_RESERVE of them free), the rest go first in
      -- the queue, ahead of the other guesses
      local moved = {}
      for _, b in ipairs(promote) do moved[b] = true urgent[#urgent + 1] = b end
      local queue2 = {}
      for _, job in ipairs(urgent) do
        job.urgent = true
        if not urgent_room() then queue2[#queue2 + 1] = job
        elseif start(job) then bg.running[#bg.running + 1] = job
        else bg_drop(job) end
      end
      for _, q in ipairs(bg.queue) do if not moved[q] then queue2[#queue2 + 1] = q end end
      bg.queue = queue2
    end
    M.pump(0)
    return jobs
  end
  local qi = 1
  while qi <= #queue or #running > 0 do
    while #running < parallel and qi <= #queue do
      local job = queue[qi]
      job.wait_state = "not foreseen" -- (compiled now, in the foreground: no guess named it)
      qi = qi + 1
      if start(job) then running[#running + 1] = job end
    end
    local still = {}
    for i, job in ipairs(running) do
      poll(job, i == 1 and 20 or 0, deadline)
      if not job.done then still[#still + 1] = job end
    end
    running = still
  end
  return jobs
end

-- One source, compiled now (cached): the job table. A background job of the same
-- source and options (M.run with opts.background) is waited for, not started again.
function M.compile(src, opts)
  local job, why = M.prepare(src, opts)
  if not job then return { done = true, ok = false, rejected = true, log = why, resources = {} } end
  local pending = not (opts and opts.no_cache) and bg_wait(job.key)
  if pending then
    pending.waited_background = true
    return pending
  end
  M.run({ job }, opts)
  job.wait_state = job.cached and "done" or "not foreseen"
  return job
end

return M
