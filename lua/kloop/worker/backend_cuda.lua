-- kloop.worker.backend_cuda: the CUDA backend of the evaluation protocol (runs in a worker).
-- Every operation returns true/value, or nil, message, fatal; fatal means the context
-- is dead and only a new worker process recovers.
local core = require("kloop.core.ffi")
local buf = require("kloop.core.buf")
local gpu = require("kloop.core.gpu")
local util = require("kloop.util")
local ffi = core.ffi
local C = core.C

-- checks_on_device: region checks are a kernel here, cheap enough for every timed
-- repetition (kloop.worker.protocol)
local M = { name = "cuda", checks_on_device = true }

-- CUresult values after which the context is unusable (sticky errors).
local FATAL = {
  [700] = "illegal address", [701] = "launch out of resources", [702] = "launch timeout",
  [710] = "device assert", [714] = "hardware stack error", [715] = "illegal instruction",
  [716] = "misaligned address", [717] = "invalid address space", [718] = "invalid pc",
  [719] = "launch failure", [999] = "unknown error",
}
-- 701 (out of resources) is reported at launch and leaves the context usable.
FATAL[701] = nil

local err = ffi.new("kl_err")

local function check(st)
  if st == 0 then return true end
  local code = err.code
  local fatal = err.status == C.KL_ECUDA and FATAL[code] ~= nil
  return nil, ffi.string(err.msg), fatal, code
end

-- req: the worker's hello request ({device = N}).
function M.init(req)
  local device = req.device or 0
  M.device = device
  local ok, msg = check(C.kl_cuda_init(device or 0, err))
  if not ok then return nil, msg end
  local info = ffi.new("kl_gpu_info")
  ok, msg = check(C.kl_cuda_info(device or 0, info, err))
  if not ok then return nil, msg end
  M.info = gpu.from_info(info)
  -- A scratch buffer twice the L2 size, read before each timed repetition (flush_cache).
  local flush_bytes = math.max(2 * info.l2_bytes, 2^20)
  local p = ffi.new("uint64_t[1]")
  ok, msg = check(C.kl_cuda_alloc(flush_bytes, p, err))
  if not ok then return nil, msg end
  M.flush_ptr, M.flush_words = p[0], flush_bytes / 4
  -- The device heap (in-kernel malloc) is small unless the task asks for more: it is
  -- the one place a kernel's data outlives its module (docs/TASKS.md).
  ok, msg = check(C.kl_cuda_set_heap_limit(req.device_heap or 2^20, err))
  if not ok then return nil, msg end
  M.ev0 = ffi.new("void*[1]")
  M.ev1 = ffi.new("void*[1]")
  ok, msg = check(C.kl_cuda_event_create(M.ev0, err))
  if ok then ok, msg = check(C.kl_cuda_event_create(M.ev1, err)) end
  if not ok then return nil, msg end
  return M.info
end

-- image: the file's content when the caller has it already (a reload: mod.image)
function M.load(path, image)
  image = image or util.read_file(path)
  if not image then return nil, "cannot read " .. path end
  local mod = ffi.new("void*[1]")
  local ok, msg, fatal = check(C.kl_cuda_module_load(image, mod, err))
  if not ok then return nil, msg, fatal end
  return { ptr = mod[0], image = image }
end

function M.unload(mod)
  if mod and mod.ptr ~= nil then C.kl_cuda_module_unload(mod.ptr, err) mod.ptr = nil end
end

function M.func(mod, entry)
  local fn = ffi.new("void*[1]")
  local ok, msg, fatal = check(C.kl_cuda_function(mod.ptr, entry, fn, err))
  if not ok then return nil, msg, fatal end
  return fn[0]
end

-- A module-scope symbol (a __constant__ table the task fills): its device address (a
-- number, like alloc's) and size in bytes, or nil, msg, fatal.
local sym_ptr, sym_bytes = ffi.new("uint64_t[1]"), ffi.new("size_t[1]")
function M.symbol(mod, name)
  local ok, msg, fatal = check(C.kl_cuda_module_global(mod.ptr, name, sym_ptr, sym_bytes, err))
  if not ok then return nil, msg, fatal end
  return tonumber(sym_ptr[0]), tonumber(sym_bytes[0])
end

function M.attrs(fn)
  local a = ffi.new("kl_func_attrs")
  if C.kl_cuda_func_attrs(fn, a, err) ~= 0 then return {} end
  return { registers = a.num_regs, static_smem = a.static_smem, local_bytes = a.local_bytes,
    const_bytes = a.const_bytes, max_threads = a.max_threads, binary_version = a.binary_version }
end

function M.prepare_launch(fn, smem)
  if smem > 48 * 1024 then
    return check(C.kl_cuda_func_set_dynamic_smem(fn, smem, err))
  end
  return true
end

function M.alloc(bytes)
  local p = ffi.new("uint64_t[1]")
  local ok, msg, fatal = check(C.kl_cuda_alloc(bytes, p, err))
  if not ok then return nil, msg, fatal end
  return p[0]
end

function M.free(ptr) C.kl_cuda_free(ptr, err) end
function M.h2d(dst, src, bytes) return check(C.kl_cuda_h2d(dst, src, bytes, err)) end
function M.d2h(dst, src, bytes) return check(C.kl_cuda_d2h(dst, src, bytes, err)) end
function M.d2d(dst, src, bytes) return check(C.kl_cuda_d2d(dst, src, bytes, err)) end
function M.fill32(dst, word, count) return check(C.kl_cuda_fill32(dst, word, count, err)) end

function M.launch(fn, grid, block, smem, params)
  local g = ffi.new("unsigned[3]", grid)
  local b = ffi.new("unsigned[3]", block)
  return check(C.kl_cuda_launch(fn, g, b, smem, params, err))
end

function M.sync() return check(C.kl_cuda_sync(err)) end

-- Measures the copy bandwidth (bytes read + written) and the float32 FMA rate of this
-- GPU; fma_cubin holds kloop.peaks' fma_peak kernel. Best of several repetitions.
function M.measure_peaks(fma_cubin)
  local bytes = 512 * 2^20
  local a, e1 = M.alloc(bytes)
  local b, e2 = M.alloc(bytes)
  if not (a and b) then return nil, e1 or e2 end
  local best_bw = 0
  for rep = 1, 12 do
    local ok, m = M.timer_start()
    if ok then ok, m = M.d2d(b, a, bytes) end
    if ok then ok, m = M.timer_stop() end
    local ms = ok and M.timer_read()
    if not ms then M.free(a) M.free(b) return nil, m end
    if rep > 2 then best_bw = math.max(best_bw, 2 * bytes / (ms * 1e-3)) end
  end
  M.free(a)
  M.free(b)
  local mod, msg = M.load(fma_cubin)
  if not mod then return nil, msg end
  local fn, ferr = M.func(mod, "fma_peak")
  if not fn then return nil, ferr end
  local threads, blocks, iters = 256, M.info.sm_count * 16, 512
  local out = assert(M.alloc(threads * blocks * 4))
  local p_out = ffi.new("uint64_t[1]", out)
  local p_it = ffi.new("int[1]", iters)
  local p_a, p_b = ffi.new("float[1]", 0.999), ffi.new("float[1]", 0.001)
  local params = ffi.new("void*[4]", { p_out, p_it, p_a, p_b })
  local best_fl = 0
  for rep = 1, 8 do
    local ok, m = M.timer_start()
    if ok then ok, m = M.launch(fn, { blocks, 1, 1 }, { threads, 1, 1 }, 0, params) end
    if ok then ok, m = M.timer_stop() end
    local ms = ok and M.timer_read()
    if not ms then M.free(out) return nil, m end
    if rep > 2 then best_fl = math.max(best_fl, 2 * 8 * iters * threads * blocks / (ms * 1e-3)) end
  end
  M.free(out)
  M.unload(mod)
  return { bytes = best_bw, flops = best_fl }
end

-- Clocks, temperature, power and throttle reasons now (nil, why when NVML is absent).
function M.sample()
  local s = ffi.new("kl_gpu_sample")
  local e = ffi.new("kl_err")
  if C.kl_nvml_sample(M.info.uuid, M.device or 0, s, e) ~= 0 then return nil, ffi.string(e.msg) end
  return { sm_mhz = s.sm_mhz, mem_mhz = s.mem_mhz, temp_c = s.temp_c, power_w = s.power_mw / 1000,
    throttle = tonumber(s.throttle) }
end

-- Kernel activity (CUPTI): start, then take the kernel records {name, ms, grid, block}
-- of what ran since (and how many were dropped).
function M.activity_start()
  local e = ffi.new("kl_err")
  if C.kl_activity_start(e) ~= 0 then return nil, ffi.string(e.msg), false, e.status == C.KL_ENOPERM end
  return true
end

local function activity_records(fn)
  local e = ffi.new("kl_err")
  local max = 16384 -- as many as the core keeps; it counts the rest as dropped
  local recs, n, dropped = ffi.new("kl_kernel_rec[?]", max), ffi.new("int[1]"), ffi.new("int[1]")
  if fn(recs, max, n, dropped, e) ~= 0 then return nil, ffi.string(e.msg) end
  local out = {}
  for i = 0, math.min(n[0], max) - 1 do
    local r = recs[i]
    -- (a record flushed before its kernel ended has no end: not a duration)
    if r.end_ns > r.start_ns then out[#out + 1] = { name = ffi.string(r.name), start_ns = tonumber(r.start_ns), end_ns = tonumber(r.end_ns),
      ms = tonumber(r.end_ns - r.start_ns) / 1e6, grid = { r.grid[0], r.grid[1], r.grid[2] },
      block = { r.block[0], r.block[1], r.block[2] } } end
  end
  return out, dropped[0]
end

-- The timeline (kloop.worker.trace): copies and fills recorded too, and CUPTI's clock.
function M.activity_timeline(on)
  local e = ffi.new("kl_err")
  if C.kl_activity_timeline(on and 1 or 0, e) ~= 0 then return nil, ffi.string(e.msg) end
  return true
end
function M.clock_ns() return tonumber(C.kl_cupti_now()) end

-- Records since the start or the last take (recording goes on); stop ends recording.
function M.activity_take() return activity_records(C.kl_activity_take) end
function M.activity_stop() return activity_records(C.kl_activity_stop) end

-- Hardware metrics for the kernels `run` launches, one range per kernel. User replay
-- first: `prepare` (inputs copied in, outputs poisoned, L2 flushed) runs before every
-- pass, so each pass starts from the state the timing gives a kernel; where CUPTI
-- refuses that, kernel replay (CUPTI saves and restores memory itself). Returns
-- {per_kernel = {{metric -> value}}, passes, chip, dropped, replay}, or nil, message,
-- fatal, no_counters (profiling not permitted or not supported here).
function M.profile_metrics(names, run, max_kernels, prepare)
  local e = ffi.new("kl_err")
  local function fail()
    return nil, ffi.string(e.msg), false, e.status == C.KL_ENOPERM
  end
  local chip = ffi.new("char[64]")
  if C.kl_prof_chip(M.device or 0, chip, 64, e) ~= 0 then return fail() end
  local arr = ffi.new("const char*[?]", #names, names)
  local function attempt(user)
    local pp = ffi.new("kl_prof*[1]")
    if C.kl_prof_new(chip, arr, #names, pp, e) ~= 0 then return fail() end
    local prof = pp[0]
    local function done(...) C.kl_prof_free(prof) return ... end
    if C.kl_prof_enable(prof, max_kernels, user and 1 or 0, e) ~= 0 then return done(fail()) end
    local need = C.kl_prof_passes(prof)
    local all = ffi.new("int[1]")
    local pass = 0
    repeat
      pass = pass + 1
      if pass > need + 2 then
        return done(nil, string.format("user replay: %d passes run, CUPTI asked for %d and wants more", pass - 1, need))
      end
      if prepare then
        local ok, msg, fatal = prepare()
        if not ok then return done(nil, msg, fatal) end
      end
      if C.kl_prof_start(prof, e) ~= 0 then
        -- a later pass may need its configuration again (pass index from the last stop)
        if pass == 1 or C.kl_prof_reconfigure(prof, e) ~= 0 or C.kl_prof_start(prof, e) ~= 0 then return done(fail()) end
      end
      local ok, msg, fatal = run()
      if ok then ok, msg, fatal = M.sync() end
      local st = C.kl_prof_stop(prof, all, e)
      if not ok then return done(nil, msg, fatal) end
      if st ~= 0 then return done(fail()) end
    until not user or all[0] == 1
    local ranges, dropped = ffi.new("int[1]"), ffi.new("int[1]")
    if C.kl_prof_decode(prof, ranges, dropped, e) ~= 0 then return done(fail()) end
    local per = {}
    local vals = ffi.new("double[?]", #names)
    for r = 0, ranges[0] - 1 do
      if C.kl_prof_values(prof, r, vals, e) ~= 0 then return done(fail()) end
      local k = {}
      -- a metric CUPTI could not evaluate comes back NaN: leave it out
      for i, n in ipairs(names) do
        local v = vals[i - 1]
        if v == v and v ~= math.huge and v ~= -math.huge then k[n] = v end
      end
      per[#per + 1] = k
    end
    return done({ per_kernel = per, passes = need, chip = ffi.string(chip), dropped = dropped[0],
      replay = user and "user" or "kernel", passes_run = pass })
  end
  local res, msg, fatal, noperm = attempt(true)
  if res or fatal or noperm then return res, msg, fatal, noperm end
  local res2, msg2, fatal2, noperm2 = attempt(false)
  if res2 then res2.user_replay_error = msg end
  return res2, msg2, fatal2, noperm2
end

-- The L2 flush kernel (kloop.eval.flush_source, compiled by the parent): it reads the
-- scratch buffer, twice the L2, which holds zeros so the kernel never writes.
function M.set_flush_kernel(path)
  if M.flush_fn then return true end -- once per worker
  local mod, msg = M.load(path)
  if not mod then return nil, "L2 flush kernel: " .. msg end
  local fn, ferr = M.func(mod, "kloop_l2_flush")
  if not fn then return nil, "L2 flush kernel: " .. ferr end
  local ok, m2 = check(C.kl_cuda_fill32(M.flush_ptr, 0, M.flush_words, err))
  if ok then ok, m2 = M.sync() end
  if not ok then return nil, m2 end
  local sink = M.alloc(16)
  if not sink then return nil, "L2 flush kernel: no memory for its sink" end
  M.flush_slots = { ffi.new("uint64_t[1]", M.flush_ptr), ffi.new("uint64_t[1]", M.flush_words / 4),
    ffi.new("uint64_t[1]", sink) }
  M.flush_params = ffi.new("void*[3]", M.flush_slots)
  M.flush_mod, M.flush_fn = mod, fn
  M.flush_grid = { M.info.sm_count * 8, 1, 1 }
  return true
end

-- Makes the next launch start with a cold L2 and nothing dirty in it: reading twice
-- the L2 of clean data writes back whatever earlier copies and fills left dirty (so
-- that write-back does not land inside the timed region) and evicts the kernel's data.
function M.flush_cache()
  if not M.flush_fn then return nil, "no L2 flush kernel: the setup request brings it" end
  return M.launch(M.flush_fn, M.flush_grid, { 256, 1, 1 }, 0, M.flush_params)
end

-- One of kloop's own kernels (compiled by the parent): its module and function, or
-- nil, a message naming it.
local function own_kernel(path, entry, what)
  local mod, msg = M.load(path)
  if not mod then return nil, what .. ": " .. msg end
  local fn, ferr = M.func(mod, entry)
  if not fn then return nil, what .. ": " .. ferr end
  return mod, fn
end

-- The state-check kernel (kloop.eval.check_source, compiled by the parent) and its two
-- small buffers: region descriptors in, results out.
M.max_regions = 4096
-- Page-locked host memory of `bytes` for `what`: a pointer of ctype, or nil, message.
local function host_buffer(bytes, ctype, what)
  local p = ffi.new("void*[1]")
  local ok, msg = check(C.kl_cuda_host_alloc(bytes, p, err))
  if not ok then return nil, what .. ": " .. tostring(msg) end
  return ffi.cast(ctype, p[0])
end

function M.set_check_kernel(path)
  if M.check_fn then return true end
  local mod, fn = own_kernel(path, "kloop_check_regions", "state-check kernel")
  if not mod then return nil, fn end
  -- the descriptors and results pass through page-locked host memory: copies queued in
  -- order with the check's launch, one wait for all of it (a copy from pageable memory
  -- left the GPU idle about 0.1 ms a check: round15a's timeline). Everything is in place
  -- before the kernel is: a set-up that failed half-way is not taken for a done one.
  -- (each made once: a set-up that failed half-way and runs again reuses what it made)
  local e
  if not M.check_desc_host then
    M.check_desc_host, e = host_buffer(M.max_regions * ffi.sizeof("kl_region"), "kl_region*", "state-check kernel")
    if not M.check_desc_host then return nil, e end
  end
  if not M.check_res_host then
    M.check_res_host, e = host_buffer(M.max_regions * ffi.sizeof("kl_region_result"), "kl_region_result*",
      "state-check kernel")
    if not M.check_res_host then return nil, e end
  end
  if not M.check_desc then
    M.check_desc, e = M.alloc(M.max_regions * ffi.sizeof("kl_region"))
    if not M.check_desc then return nil, "state-check kernel: " .. tostring(e) end
  end
  if not M.check_res then
    M.check_res, e = M.alloc(M.max_regions * ffi.sizeof("kl_region_result"))
    if not M.check_res then return nil, "state-check kernel: " .. tostring(e) end
  end
  local desc, res = M.check_desc, M.check_res
  M.check_mod = mod
  M.guard_fn = M.func(mod, "kloop_guard_fill") -- (guard zones written on the device: M.fill_guard)
  M.fill_fn = M.func(mod, "kloop_fill") -- (inputs drawn on the device: M.fill_input)
  M.check_slots = { ffi.new("uint64_t[1]", desc), ffi.new("uint64_t[1]", res) }
  M.check_params = ffi.new("void*[2]", M.check_slots)
  M.check_fn = fn
  return true
end

-- Checks n regions (kl_region arr[n]) into out (kl_region_result[n]): descriptors copied
-- in, results zeroed, one launch, results copied back, the device's copies cleared, all
-- queued in order; then `beside`, then one wait. Nothing else is queued meanwhile, so no candidate runs
-- while the page-locked copies (reachable from kernels) hold seeds or digests: they are
-- cleared before this returns.
-- beside (optional): host work run after the check is queued, before the wait (the
-- protocol loads the next repetition's module there).
function M.check_regions(arr, n, out, beside)
  if not M.check_fn then return nil, "no state-check kernel: the setup request brings it" end
  if n == 0 then return true end
  if n > M.max_regions then return nil, "too many regions to check (" .. n .. ")" end
  local most = 0
  for k = 0, n - 1 do most = math.max(most, tonumber(arr[k].nwords)) end
  local dbytes, rbytes = n * ffi.sizeof("kl_region"), n * ffi.sizeof("kl_region_result")
  ffi.copy(M.check_desc_host, arr, dbytes)
  local ok, msg, fatal = check(C.kl_cuda_h2d_async(M.check_desc, M.check_desc_host, dbytes, err))
  if ok then ok, msg, fatal = M.fill32(M.check_res, 0, rbytes / 4) end
  -- (enough blocks to fill every SM for a large region: its reads are what the check waits on)
  local gx = math.max(1, math.min(M.info.sm_count * 8, math.ceil(most / (256 * 8))))
  if ok then ok, msg, fatal = M.launch(M.check_fn, { gx, n, 1 }, { 256, 1, 1 }, 0, M.check_params) end
  if ok then ok, msg, fatal = check(C.kl_cuda_d2h_async(M.check_res_host, M.check_res, rbytes, err)) end
  -- the descriptors hold the digests' seeds and the results the digests: both cleared
  -- whole, so no candidate launched after this check reads them (to forge an output with
  -- a matching digest) or keeps anything there between its launches
  if ok then ok, msg, fatal = M.fill32(M.check_desc, 0, M.max_regions * ffi.sizeof("kl_region") / 4) end
  if ok then ok, msg, fatal = M.fill32(M.check_res, 0, M.max_regions * ffi.sizeof("kl_region_result") / 4) end
  local okb, berr = true, nil
  if ok and beside then okb, berr = pcall(beside) end
  -- (a queued step that failed still waits: the copy from the host must be done before
  -- its source is cleared)
  local oks, smsg, sfatal = M.sync()
  if ok and not oks then ok, msg, fatal = oks, smsg, sfatal end
  if ok then ffi.copy(out, M.check_res_host, rbytes) end
  ffi.fill(M.check_desc_host, dbytes)
  ffi.fill(M.check_res_host, rbytes)
  if not okb then error(berr, 0) end
  return ok, msg, fatal
end

-- The comparison kernel (kloop.eval.worker_client's compare_source, compiled by the
-- parent) and its partial-results buffer; path nil: none, outputs are compared on the host.
M.max_compare_blocks = 1024
function M.set_compare_kernel(path)
  if not path then M.compare_fn = nil return true end
  if M.compare_fn then return true end
  local mod, fn = own_kernel(path, "kloop_compare", "comparison kernel")
  if not mod then return nil, fn end
  -- (page-locked: the copy back is queued with the launch, one wait: check_regions; in
  -- place before the kernel is)
  local e
  if not M.compare_host then
    M.compare_host, e = host_buffer(M.max_compare_blocks * ffi.sizeof("kl_cmp_part"), "kl_cmp_part*", "comparison kernel")
    if not M.compare_host then return nil, e end
  end
  if not M.compare_parts then
    M.compare_parts, e = M.alloc(M.max_compare_blocks * ffi.sizeof("kl_cmp_part"))
    if not M.compare_parts then return nil, "comparison kernel: " .. tostring(e) end
  end
  local parts = M.compare_parts
  M.compare_words = M.max_compare_blocks * ffi.sizeof("kl_cmp_part") / 4
  local ok, msg = M.fill32(parts, 0, M.compare_words)
  if not ok then return nil, msg end
  M.compare_mod = mod
  -- (the same module masks references on the device: M.mask_device)
  M.mask_fn = M.func(mod, "kloop_mask")
  M.compare_fn = fn
  return true
end

-- Whether outputs can be compared here (the setup request brought the kernel).
function M.device_compare_ready() return M.compare_fn ~= nil end

-- Compares n elements of out (dtype f32 or f64, device) with the masked reference ref
-- (f32 or f64, device; kl_buf_mask with seed) as kl_buf_compare does on the host: the
-- blocks' parts merged in order by the same C function (kl_cmp_merge). Returns the
-- kl_cmp, or nil, msg, fatal.
local part_args = {}
function M.compare_device(out, out_dtype, ref, ref_dtype, n, atol, rtol, pat, check_poison, seed)
  if not M.compare_fn then return nil, "no comparison kernel" end
  if n == 0 then return buf.merge_parts(M.compare_host, 0, 0) end -- (nothing to compare)
  local nb = math.max(1, math.min(M.max_compare_blocks, math.ceil(n / (256 * 16))))
  -- (a multiple of 4: the kernel takes four elements at a time)
  local chunk = math.ceil(math.ceil(n / nb) / 4) * 4
  nb = math.max(1, math.ceil(n / chunk))
  local a = part_args
  a[1] = ffi.new("uint64_t[1]", out)
  a[2] = ffi.new("int[1]", out_dtype == "f64" and 1 or 0)
  a[3] = ffi.new("uint64_t[1]", ref)
  a[4] = ffi.new("int[1]", ref_dtype == "f64" and 1 or 0)
  a[5] = ffi.new("uint64_t[1]", n)
  a[6] = ffi.new("double[1]", atol)
  a[7] = ffi.new("double[1]", rtol)
  a[8] = ffi.new("uint64_t[1]", pat)
  a[9] = ffi.new("int[1]", check_poison and 1 or 0)
  a[10] = ffi.new("uint64_t[1]", seed)
  a[11] = ffi.new("uint64_t[1]", chunk)
  a[12] = ffi.new("uint64_t[1]", M.compare_parts)
  local params = ffi.new("void*[12]", a)
  local pbytes = nb * ffi.sizeof("kl_cmp_part")
  local ok, msg, fatal = M.launch(M.compare_fn, { nb, 1, 1 }, { 256, 1, 1 }, 0, params)
  if ok then ok, msg, fatal = check(C.kl_cuda_d2h_async(M.compare_host, M.compare_parts, pbytes, err)) end
  -- cleared whole: no partial sum is left for a candidate, and nothing it wrote survives
  -- (the buffer is checked as zeros after every candidate: state_regions)
  if ok then ok, msg, fatal = M.fill32(M.compare_parts, 0, M.compare_words) end
  local oks, smsg, sfatal = M.sync()
  if ok and not oks then ok, msg, fatal = oks, smsg, sfatal end
  local r = ok and buf.merge_parts(M.compare_host, nb, n)
  -- the host's copy cleared too, on every path: it is reachable from kernels, and a copy
  -- that landed before a later step failed would leave a reference value there
  ffi.fill(M.compare_host, pbytes)
  if not ok then return nil, msg, fatal end
  return r
end

-- Masks nwords words of src into dst on the device, as kl_buf_mask does on the host
-- (the comparison kernel unmasks them with the same seed). Returns true, or nil, msg, fatal.
-- Writes a guard zone's pattern (kl_guard_fill's words for seed) on the device: nothing
-- is copied from the host. Returns true, or nil, msg, fatal (the next sync reports a fault).
function M.fill_guard_ready() return M.guard_fn ~= nil end
function M.fill_guard(ptr, nwords, seed)
  if not M.guard_fn then return nil, "no guard-fill kernel" end
  local nb = math.max(1, math.min(1024, math.ceil(nwords / 256)))
  local a = { ffi.new("uint64_t[1]", ptr), ffi.new("uint64_t[1]", nwords), ffi.new("uint64_t[1]", seed) }
  return M.launch(M.guard_fn, { nb, 1, 1 }, { 256, 1, 1 }, 0, ffi.new("void*[3]", a))
end

-- Draws n elements of dtype into ptr on the device from dist ({kind, a, b}) and seed, the
-- bits kl_buf_fill gives on the host (kloop_fill), then zeros up to `used` bytes; with
-- round (a dtype), each value passes through that type first (a reference's wider copy
-- of an inout's initial values). Returns true, or nil, msg, fatal (the next sync reports
-- a fault).
function M.fill_input_ready() return M.fill_fn ~= nil end
function M.fill_input(ptr, dtype, n, used, dist, seed, round)
  if not M.fill_fn then return nil, "no input-fill kernel" end
  local code, lo, span, key = buf.fill_args(dist, seed)
  if not code then return nil, "a bad distribution: " .. tostring(dist.kind) end
  local nb = math.max(1, math.min(M.info.sm_count * 8, math.ceil(n / 256)))
  local a = { ffi.new("uint64_t[1]", ptr), ffi.new("uint64_t[1]", n), ffi.new("uint64_t[1]", used),
    ffi.new("int[1]", buf.DTYPE[dtype]), ffi.new("int[1]", round and buf.DTYPE[round] or -1), ffi.new("int[1]", code),
    ffi.new("double[1]", dist.a or 0), ffi.new("double[1]", dist.b or 0), ffi.new("double[1]", lo),
    ffi.new("double[1]", span), ffi.new("uint64_t[1]", key) }
  return M.launch(M.fill_fn, { nb, 1, 1 }, { 256, 1, 1 }, 0, ffi.new("void*[11]", a))
end

function M.mask_device_ready() return M.mask_fn ~= nil end
function M.mask_device(dst, src, nwords, seed)
  if not M.mask_fn then return nil, "no mask kernel" end
  local nb = math.max(1, math.min(4096, math.ceil(nwords / 256)))
  local a = { ffi.new("uint64_t[1]", dst), ffi.new("uint64_t[1]", src), ffi.new("uint64_t[1]", nwords),
    ffi.new("uint64_t[1]", seed) }
  local ok, msg, fatal = M.launch(M.mask_fn, { nb, 1, 1 }, { 256, 1, 1 }, 0, ffi.new("void*[4]", a))
  if ok then ok, msg, fatal = M.sync() end
  return ok, msg, fatal
end

-- The backend's own device state a candidate could reach: the L2 flush scratch (zeros).
function M.state_regions()
  local out = {}
  if M.flush_ptr then
    out[#out + 1] = { ptr = M.flush_ptr, nwords = M.flush_words, mode = buf.REGION.const, word = 0,
      what = "kloop's L2 flush buffer" }
  end
  if M.compare_fn then
    out[#out + 1] = { ptr = M.compare_parts, nwords = M.compare_words, mode = buf.REGION.const, word = 0,
      what = "kloop's comparison buffer" }
  end
  return out
end

function M.restore_state()
  if M.compare_fn then
    local ok, msg = check(C.kl_cuda_fill32(M.compare_parts, 0, M.compare_words, err))
    if not ok then return nil, msg end
  end
  if not M.flush_ptr then return true end
  return check(C.kl_cuda_fill32(M.flush_ptr, 0, M.flush_words, err))
end

function M.timer_start() return check(C.kl_cuda_event_record(M.ev0[0], err)) end
function M.timer_stop() return check(C.kl_cuda_event_record(M.ev1[0], err)) end
function M.timer_read()
  local ms = ffi.new("float[1]")
  local ok, msg, fatal = check(C.kl_cuda_event_elapsed_ms(M.ev0[0], M.ev1[0], ms, err))
  if not ok then return nil, msg, fatal end
  return ms[0]
end

return M
