-- kloop.eval.compile_host: C candidates built by the system compiler into shared objects,
-- in a child process with a deadline, through the same include fence and a cache.
local proc = require("kloop.core.proc")
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local compile = require("kloop.eval.compile")

local M = {}

M.default_options = { "-O3", "-march=native" }

-- Options a task or candidate may add; anything that reaches other files or changes
-- how the object is loaded (-I, -include, -Wl, -l, -B, --sysroot, plugins) is refused.
local allowed = { "^%-O[0-3s]$", "^%-Ofast$", "^%-march=[%w%-]+$", "^%-mtune=[%w%-]+$", "^%-m[%w%-]+$",
  "^%-f[%w%-]+$", "^%-D[%a_][%w_]*=?[%w_%.%-]*$", "^%-std=[%w%+]+$", "^%-fopenmp$", "^%-ffast%-math$" }
local refused = { "^%-fplugin", "^%-fdump", "^%-fprofile", "^%-fauto%-profile", "^%-frecord" }

function M.check_option(o)
  for _, pat in ipairs(refused) do if o:match(pat) then return nil, "option '" .. o .. "' is not allowed" end end
  for _, pat in ipairs(allowed) do if o:match(pat) then return true end end
  return nil, "option '" .. o .. "' is not allowed (allowed: -O, -march/-mtune/-m..., -f..., -D, -std)"
end

function M.cc() return os.getenv("CC") or "cc" end

-- The environment a compiler child gets: these names (prefixes ending in _) only, so no
-- key or token of kloop's environment reaches it or what it runs.
M.child_env = { "PATH", "LANG", "LC_", "TMPDIR", "CC", "GCC_", "LIBRARY_PATH", "CPATH" }

-- Runs argv with a deadline; returns exit status (or nil on timeout), output tail.
local function run(argv, deadline_s)
  local p, err = proc.spawn(argv, M.child_env)
  if not p then return nil, err end
  local ok, why = p:close(math.floor(deadline_s * 1000))
  local out = p:tail()
  if not ok and why == "timeout" then return nil, out, true end
  return p.raw.exit_status, out
end
M.run_filtered = run

-- The compiler's first --version line (part of every cache key), asked with the same
-- filtered environment as a compile and a deadline.
local cc_version_cache
function M.cc_version()
  if not cc_version_cache then
    local status, out = run({ "/bin/sh", "-c", 'exec "$0" --version', M.cc() }, 10)
    cc_version_cache = (status == 0 and out and out:match("^[^\n]*")) or "unknown"
  end
  return cc_version_cache
end

local function cache_dir() return compile.cache_dir():gsub("/cubin$", "/host") end

function M.prepare(src, opts)
  opts = opts or {}
  local quoted, why = compile.scan_includes(src)
  if not quoted then return nil, why end
  for _, name in ipairs(quoted) do
    if not util.file_exists((opts.dir or ".") .. "/" .. name) then
      return nil, "#include \"" .. name .. "\": not found in the task's folder"
    end
  end
  local options = {}
  for _, o in ipairs(M.default_options) do options[#options + 1] = o end
  local oko, oerr = compile.add_options(options, opts.options, M.check_option)
  if not oko then return nil, oerr end
  local ok, derr = compile.add_defines(options, opts.defines)
  if not ok then return nil, derr end
  local parts = { M.cc_version(), src, table.concat(options, "\0") }
  for _, name in ipairs(quoted) do parts[#parts + 1] = util.read_file((opts.dir or ".") .. "/" .. name) or "" end
  local key = compile.content_key(parts)
  return { src = src, options = options, key = key, dir = opts.dir or ".", name = opts.name or "candidate.c" }
end

function M.compile(src, opts)
  opts = opts or {}
  local job, why = M.prepare(src, opts)
  if not job then return { done = true, ok = false, rejected = true, log = why, resources = {} } end
  local dir = cache_dir()
  local so = dir .. "/" .. job.key .. ".so"
  job.cubin_path = so
  job.resources = {}
  if not opts.no_cache and util.file_exists(so) then
    job.ok, job.cached, job.seconds, job.log = true, true, 0, util.read_file(dir .. "/" .. job.key .. ".log") or ""
    return job
  end
  util.mkdir_p(dir)
  local srcpath = dir .. "/" .. job.key .. ".c"
  util.write_file(srcpath, src)
  local tmp = so .. ".tmp" .. sys.getpid()
  local argv = { "/bin/sh", "-c", 'exec "$0" "$@"', M.cc() }
  for _, o in ipairs(job.options) do argv[#argv + 1] = o end
  for _, o in ipairs({ "-shared", "-fPIC", "-iquote", job.dir, "-o", tmp, srcpath }) do argv[#argv + 1] = o end
  local t0 = sys.now()
  local status, out, timed_out = run(argv, opts.deadline or compile.default_deadline)
  job.seconds = sys.now() - t0
  job.log = (out or ""):gsub(util.escape_pattern(srcpath), job.name)
  if timed_out then
    job.ok, job.timeout = false, true
    job.log = string.format("compile deadline exceeded (%.0f s): the compiler was stopped", opts.deadline or compile.default_deadline)
  elseif status == 0 then
    os.rename(tmp, so)
    util.write_file(dir .. "/" .. job.key .. ".log", job.log)
    job.ok = true
  else
    os.remove(tmp)
    job.ok = false
  end
  return job
end

-- A sanitizer build (kloop.eval.sanitize): the candidate and a harness (C source that
-- holds main) linked into one executable with AddressSanitizer and UBSan, under the
-- same include fence, option checks and deadline as a candidate build; never cached
-- (the harness carries the inputs of one promotion). Returns {ok, exe, log, seconds,
-- timeout} or {ok = false, rejected = true, log}.
M.sanitize_options = { "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
  "-g", "-O1" }

function M.build_sanitized(src, harness, opts)
  opts = opts or {}
  local job, why = M.prepare(src, opts)
  if not job then return { ok = false, rejected = true, log = why } end
  local dir = cache_dir():gsub("/host$", "/sanitize") .. "/" .. job.key .. "-" .. sys.getpid()
  util.mkdir_p(dir)
  local cpath, hpath, exe = dir .. "/" .. job.name, dir .. "/kloop_harness.c", dir .. "/harness"
  util.write_file(cpath, src)
  util.write_file(hpath, harness)
  local argv = { "/bin/sh", "-c", 'exec "$0" "$@"', M.cc() }
  -- the task's and candidate's options first (their -O is overridden by the sanitizer's)
  for i = #M.default_options + 1, #job.options do argv[#argv + 1] = job.options[i] end
  for _, o in ipairs(M.sanitize_options) do argv[#argv + 1] = o end
  -- the harness first: its .preinit_array entry (the sandbox) runs before the candidate's
  for _, o in ipairs({ "-iquote", job.dir, "-o", exe, hpath, cpath, "-lm" }) do argv[#argv + 1] = o end
  local t0 = sys.now()
  local status, out, timed_out = run(argv, opts.deadline or compile.default_deadline)
  local res = { seconds = sys.now() - t0, dir = dir, log = (out or ""):gsub(util.escape_pattern(dir .. "/"), "") }
  if timed_out then
    res.ok, res.timeout = false, true
  else
    res.ok = status == 0 and util.file_exists(exe)
    res.exe = res.ok and exe or nil
  end
  return res
end

return M
