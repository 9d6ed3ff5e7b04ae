-- kloop.eval.library: a task's library reference (`library = {...}`): the time a vendor
-- library (cuBLAS for a gemm) takes for the same work at the bench size, shown as a
-- line in the report (docs/TASKS.md, "library"). The measurement runs in a short-lived
-- child (`kloop -e`), never in kloop's main process, which does not initialize CUDA.
local cjson = require("cjson")
local M = {}

local function gpu_mod() return require("kloop.core.gpu") end

-- The calls a sidecar may name: their size names (in the order the child takes them),
-- the default label, and a line of what they compute.
M.CALLS = {
  sgemm = { sizes = { "m", "n", "k" }, name = "cuBLAS sgemm",
    what = "row-major C[m,n] = A[m,k] B[k,n], float32, alpha 1, beta 0" },
}
M.WARMUP, M.REPS, M.TIMEOUT_S = 5, 30, 120

local FIX = 'library = { call = "sgemm", m = "M", n = "N", k = "K" }'

-- Checks the sidecar's `library` field: the normalized table
-- ({name, call, m = "M", ...}), or raises a TaskError.
function M.check_field(file, v, task)
  local fields = require("kloop.eval.task_fields")
  local fail = fields.fail
  fields.want(file, "library", v, "table", FIX)
  if task.backend == "host" then
    fail(file, "library", "a library reference is timed on the GPU; this is a host task", "remove the library field")
  end
  local sorted_keys = require("kloop.util").sorted_keys
  local spec = M.CALLS[fields.one_of(file, "library.call", v.call, sorted_keys(M.CALLS), 'call = "sgemm"')]
  local allowed = { "name", "call" }
  for _, s in ipairs(spec.sizes) do allowed[#allowed + 1] = s end
  fields.known_fields(file, "library", v, allowed)
  if v.name ~= nil then fields.want(file, "library.name", v.name, "string", 'name = "cuBLAS sgemm"') end
  local bench = task.sizes and task.sizes.bench or {}
  local names = sorted_keys(bench)
  local out = { name = v.name or spec.name, call = v.call }
  for _, s in ipairs(spec.sizes) do
    local var = v[s]
    if type(var) ~= "string" or type(bench[var]) ~= "number" then
      fail(file, "library." .. s, string.format("%s is not a size of this task (sizes.bench has %s)",
        fields.describe(var), #names > 0 and table.concat(names, ", ") or "none"),
        string.format('%s = "%s"', s, fields.closest(tostring(var), names) or (names[1] or "N")))
    end
    out[s] = var
  end
  return out
end

-- The child's command line for lib (check_field's table) at the task's bench size.
function M.argv(exe, lib, task)
  local spec = M.CALLS[lib.call]
  local dims = {}
  for _, s in ipairs(spec.sizes) do dims[#dims + 1] = string.format("%d", task.sizes.bench[lib[s]]) end
  local chunk = string.format("require('kloop.eval.library').child(%q, %s, %d, %d)", lib.call,
    table.concat(dims, ", "), M.WARMUP, M.REPS)
  return { exe, "-q", "-e", chunk }, dims
end

-- In the child: loads cuBLAS's library and draws the inputs on the host, says so on fd 4
-- ({ready = true}), waits for the parent's go on fd 3, then opens CUDA and cuBLAS on the
-- GPU, copies the inputs, times the call, and sends one JSON reply on fd 4 ({ok,
-- median_ms, ci = {lo, hi}, n, math_mode, version, path} or {error}). Nothing touches
-- the GPU before the go (no context either: a GPU in exclusive-process mode stays the
-- worker's): the parent gives it when its worker is idle, so the library's load overlaps
-- the worker's start and no timed repetition shares the GPU. A parent gone (fd 3
-- closed) ends the child.
function M.child(call, m, n, k, warmup, reps)
  local proc, stats = require("kloop.core.proc"), require("kloop.eval.stats")
  local sys = require("kloop.core.sys")
  local reply
  -- (phases: seconds of each step after the go, for benches: the GPU idles through them)
  local phases, t = {}, sys.now()
  local g, msg = require("kloop.core.blas").gemm(m, n, k, 0, { defer_open = true })
  if g then
    phases.init_s = g.init_s
    proc.chan_send(4, cjson.encode({ ready = true }))
    if not proc.chan_recv(3) then g:close() return end
    t = sys.now()
    g, msg = g:open(phases)
  end
  if not g then
    reply = { error = msg }
  else
    local t1 = sys.now()
    local times, terr = g:time(warmup, reps)
    phases.time_s = sys.now() - t1
    phases.after_go_s = sys.now() - t
    if not times then
      reply = { error = terr }
    else
      local med, lo, hi = stats.median_ci(times)
      reply = { ok = true, call = call, median_ms = med, ci = { lo, hi }, n = #times,
        math_mode = g.math_mode == 0 and "default (fp32, no TF32)" or ("mode " .. g.math_mode),
        version = g.version, path = g.path, phases = phases }
    end
    g:close()
  end
  proc.chan_send(4, cjson.encode(reply))
end

-- Starts the timing child for task.library (it loads cuBLAS's library while the caller
-- goes on, and waits for M.finish's go): a handle for M.finish, or nil, msg. opts.exe: the kloop binary (default:
-- this one); opts.argv: another child's command line, speaking M.child's protocol.
function M.begin(task, opts)
  opts = opts or {}
  local lib = task.library
  if not lib then return nil, "the task names no library" end
  if task.backend ~= "cuda" then return nil, "a library reference needs a CUDA task" end
  local exe = opts.exe or require("kloop.core.sys").exe_path()
  if not exe then return nil, "cannot find kloop's own binary" end
  local argv, dims = M.argv(exe, lib, task)
  local p, serr = require("kloop.core.proc").spawn(opts.argv or argv) -- (opts.argv: a spec's stand-in)
  if not p then return nil, serr end
  return { proc = p, lib = lib, dims = dims }
end

-- The child's reply as a table, or nil, msg (its last output line said).
local function reply_of(h, timeout_s)
  local text, why, rmsg = h.proc:recv(timeout_s)
  if not text then
    local last = h.proc:tail():match("([^\n]+)\n?$")
    h.proc:kill()
    return nil, string.format("the timing child gave no reply (%s%s)", why,
      last and (": " .. last) or (rmsg and rmsg ~= "" and ": " .. rmsg or ""))
  end
  local ok, r = pcall(cjson.decode, text)
  if not ok or type(r) ~= "table" then h.proc:kill() return nil, "the timing child's reply is not JSON" end
  return r
end

-- Waits for a begun child to be ready, lets it time (the caller runs nothing on the GPU
-- meanwhile) and reads its answer: a table {library = name, library_ms, library_ci =
-- {lo, hi}, library_math, library_version, library_size}, or nil, msg. The child is
-- gone after. opts.timeout_s: for each of the two replies.
function M.finish(h, opts)
  local timeout = (opts and opts.timeout_s) or M.TIMEOUT_S
  local r, err
  if h.first or h.first_err then
    r, err, h.first, h.first_err = h.first, h.first_err, nil, nil -- (read by M.is_ready)
  else
    r, err = reply_of(h, timeout)
  end
  if r and r.ready then
    if not h.proc:send("go") then h.proc:kill() return nil, "the timing child is gone" end
    r, err = reply_of(h, timeout)
  end
  h.proc:close(2000)
  if not r then return nil, err end
  if not r.ok then return nil, tostring(r.error or "the timing child failed") end
  if type(r.median_ms) ~= "number" or not (r.median_ms > 0) then return nil, "the timing child's time is not positive" end
  if type(r.phases) == "table" then
    -- (the child's steps, for benches: KLOOP_WAITS_LOG; not part of the measurement)
    local parts = {}
    for _, k in ipairs({ "init_s", "cuda_s", "blas_s", "upload_s", "time_s", "after_go_s" }) do
      if type(r.phases[k]) == "number" then parts[#parts + 1] = string.format("%s %.4f", k, r.phases[k]) end
    end
    require("kloop.eval.evaluator").waits_log("library " .. table.concat(parts, " "))
  end
  return { library = h.lib.name, library_ms = r.median_ms, library_ci = r.ci, library_math = r.math_mode,
    library_version = r.version, library_size = table.concat(h.dims, "x") }
end

-- Whether a begun child has said it is ready, or has ended, so that M.finish waits for
-- no cuBLAS load; does not wait (the first reply read is kept for M.finish).
function M.is_ready(h)
  if h.first or h.first_err then return true end
  if not h.proc:ready(0) then return false end
  h.first, h.first_err = reply_of(h, 1)
  if not h.first and not h.first_err then h.first_err = "the timing child gave no reply" end
  return true
end

-- Stops a begun child that will not be finished (a run that ends before it).
function M.abandon(h)
  if h and h.proc then h.proc:kill() end
end

-- Measures task.library once in a child (M.begin, then M.finish): the table, or nil,
-- msg. opts.exe: the kloop binary (default: this one); opts.timeout_s.
function M.measure(task, opts)
  local h, err = M.begin(task, opts)
  if not h then return nil, err end
  return M.finish(h, opts)
end

-- Where a measurement is kept for the next run on the same GPU (beside the measured
-- peaks: kloop.core.gpu), by GPU, driver, call, sizes and the kloop binary; nil
-- without a GPU's identity.
function M.cache_file(g, task, exe)
  if not (g and g.uuid and g.uuid ~= "") then return nil end
  local sys = require("kloop.core.sys")
  local lib = task.library
  local _, dims = M.argv(exe or "kloop", lib, task)
  local dir = gpu_mod().peaks_cache_path(g, require("kloop.eval.compile").cache_dir())
  -- (the binary's hash once per process: the driver asks this up to three times a start)
  M.exe_hash = M.exe_hash or sys.hex64(sys.hash64(require("kloop.util").read_file(sys.exe_path() or "") or ""))
  local key = table.concat({ g.uuid, tostring(g.driver_version), lib.call, table.concat(dims, "x"), M.exe_hash }, "/")
  return dir, dir .. "/library-" .. sys.hex64(sys.hash64(key)) .. ".json"
end

-- Why a run does not measure the reference (nil: it does).
local function skip_reason(ctx)
  local task = ctx.task
  if not task.library or task.backend ~= "cuda" then return "no library reference for this task" end
  if ctx.store and ctx.store.resumed then return "a resumed run keeps the reference it recorded" end
end

-- The measurement kept for this GPU, or nil; and the cache's folder and file.
local function kept(ctx, opts)
  local util = require("kloop.util")
  local dir, file = M.cache_file(ctx.gpu, ctx.task, opts and opts.exe)
  local text = file and util.read_file(file)
  if text then
    local okj, t = pcall(cjson.decode, text)
    if okj and type(t) == "table" and type(t.library_ms) == "number" and t.library_ms > 0 then
      t.cached = true
      return t, dir, file
    end
  end
  return nil, dir, file
end

-- Begins the timing child for task.library before anything else (the driver: beside
-- the worker's prespawn, before the GPU probe), so loading cuBLAS (hundreds of MB, from
-- a cold page cache on a fresh machine) and drawing its inputs overlap the probe and the
-- worker's start; M.early then keeps or drops it. A handle, or nil.
function M.prestart(task, opts)
  if not task.library or task.backend ~= "cuda" then return nil end
  local ok, h = pcall(M.begin, task, opts)
  return ok and h or nil
end

-- Whether the reference of this task on GPU g (the probe's facts) was measured before and
-- kept: a child begun by M.prestart is then not needed (the driver stops it at once).
function M.is_kept(g, task, opts)
  return kept({ gpu = g, task = task }, opts) ~= nil
end

-- The driver's hook at the very start of a search (before the worker's): where at_start
-- will measure, its timing child begins now (ctx.library_child; h: one M.prestart began,
-- stopped here where it is not needed), so loading cuBLAS overlaps the worker's start. A
-- child that cannot start is left to at_start to say.
function M.early(ctx, opts, h)
  if skip_reason(ctx) or kept(ctx, opts) then M.abandon(h) return end
  if not h then
    local ok
    ok, h = pcall(M.begin, ctx.task, opts)
    if not ok then h = nil end
  end
  if h then ctx.library_child = h end
end

-- The driver's hook at the start of a search (after the baseline): the task's library
-- reference, measured once per GPU (and driver, sizes, kloop binary) and cached like
-- the peaks; prints one line and records it in the run (ctx.store, absent with
-- --no-store). A failure (no cuBLAS, no GPU) prints one line; the search goes on. The
-- child M.early began is told to go; without one, one is started now.
-- opts: measure's. Returns the measured table, or nil, msg.
function M.at_start(ctx, opts)
  local sys, util = require("kloop.core.sys"), require("kloop.util")
  local task = ctx.task
  local h = ctx.library_child
  ctx.library_child = nil
  local why = skip_reason(ctx)
  if why then M.abandon(h) return nil, why end
  local r, dir, file = kept(ctx, opts)
  local merr
  if r then M.abandon(h) end
  if not r then
    local okm
    if h then okm, r, merr = pcall(M.finish, h, opts)
    else okm, r, merr = pcall(M.measure, task, opts) end
    if not okm then
      M.abandon(h)
      if sys.is_interrupt(r) then error(r, 0) end
      r, merr = nil, tostring(r)
    end
    if r and file then
      util.mkdir_p(dir)
      util.replace_file(file, cjson.encode(r))
    end
  end
  sys.check_interrupt()
  local quiet = ctx.opts and ctx.opts.quiet
  if not r then
    util.eprintf("kloop: library: %s not measured (%s); the search goes on\n", task.library.name, tostring(merr))
    return nil, merr
  end
  if not quiet then
    print(string.format("library: %s %s at the bench size (%s, %s)%s", r.library, util.fmt_ms(r.library_ms),
      r.library_size, r.library_math or "math mode unknown", r.cached and ", measured before on this GPU" or ""))
  end
  if ctx.store and ctx.store.db and ctx.run_id then
    -- (the run's facts: the measurement, not whether this process measured it)
    local fact = {}
    for k, v in pairs(r) do if k ~= "cached" then fact[k] = v end end
    -- (a record that fails is said, and the search goes on, as for a failed measurement)
    local okc, okw, werr = pcall(ctx.store.db.set_run_library, ctx.store.db, ctx.run_id, fact)
    if not okc then okw, werr = nil, okw end
    if not okw then util.eprintf("kloop: library: the store did not keep the reference (%s)\n", tostring(werr)) end
  end
  return r
end

return M
