-- tests/spec/support/backend_sim.lua: a test double of a backend, so the protocol
-- (verification, timing, verdicts) runs in CI without a GPU. "Modules" are Lua files
-- returning kernels: function(params, grid, block) that read and write host memory.
local M = { name = "sim", info = { name = "sim", arch = "sim" }, launches = 0, checks_on_device = true }
M.fail_next = nil -- set to {msg=, fatal=} to make the next launch fail

function M.init() return M.info end
-- A module's `globals = {name = bytes}` are its symbols (a __constant__ table): host
-- memory per load, zeroed, which its kernels get as a fourth argument {name -> address}.
function M.load(path)
  local chunk, err = loadfile(path)
  if not chunk then return nil, err end
  local mod = { kernels = chunk(), globals = {}, sizes = {}, ptr = true }
  for name, bytes in pairs(mod.kernels.globals or {}) do
    local p = M.alloc(bytes)
    require("ffi").fill(require("ffi").cast("uint8_t*", p), bytes)
    mod.globals[name], mod.sizes[name] = p, bytes
  end
  return mod
end
function M.unload(mod)
  if not mod then return end
  for name, p in pairs(mod.globals or {}) do M.free(p) mod.globals[name] = nil end
  mod.ptr = nil
end
-- (each function's module, as the driver knows it: a launch of a function whose module
-- was unloaded fails as CUDA's does, with an invalid handle)
local owner = setmetatable({}, { __mode = "k" })
function M.func(mod, entry)
  local fn = entry ~= "globals" and mod.kernels[entry]
  if not fn then return nil, "kernel '" .. entry .. "' not found" end
  -- (a module without globals gets its kernel itself: sim_evaluator's clock turns the JIT off for it)
  if next(mod.globals) == nil then
    owner[fn] = mod
    return fn
  end
  jit.off(fn)
  local f = function(params, grid, block) return fn(params, grid, block, mod.globals) end
  owner[f] = mod
  return f
end
function M.symbol(mod, name)
  if not mod.globals[name] then return nil, "symbol '" .. name .. "' not found in the module (simulated)" end
  return mod.globals[name], mod.sizes[name]
end
function M.attrs() return { registers = 1 } end
function M.prepare_launch(fn, smem)
  if smem > 48 * 1024 then return nil, "too much shared memory" end
  return true
end
-- Memory is host memory: the host backend's own operations serve (its init, which
-- enters the sandbox, is not used here).
local host = require("kloop.worker.backend_host")
M.alloc, M.free, M.h2d, M.d2h, M.d2d, M.fill32 = host.alloc, host.free, host.h2d, host.d2h, host.d2d, host.fill32
M.check_regions = host.check_regions
-- Kernel activity and metrics, simulated: every launch while activity is on leaves a
-- record; profile_metrics runs the launches once per "pass" and reports per kernel.
-- M.no_counters makes profiling refuse like a GPU without counter access;
-- M.profile_hook(pass) runs between passes (a test may corrupt memory there).
local records
function M.activity_start() records = {} return true end
function M.activity_take()
  local r = records or {}
  if records then records = {} end
  return r, 0
end
function M.activity_stop()
  local r = records or {}
  records = nil
  return r, 0
end
function M.profile_metrics(names, run, max_kernels, prepare)
  if M.no_counters then return nil, "profiling not permitted (simulated)", false, true end
  local per, passes = nil, 2
  M.prepared = 0
  for pass = 1, passes do
    if prepare then assert(prepare()) M.prepared = M.prepared + 1 end
    local before = M.launches
    records = {}
    local ok, msg, fatal = run()
    if not ok then records = nil return nil, msg, fatal end
    local recs = records
    records = nil
    if M.profile_hook then M.profile_hook(pass) end
    if pass == 1 then
      per = {}
      for k = 1, math.min(M.launches - before, max_kernels) do
        local v = {}
        for _, n in ipairs(names) do v[n] = n == "gpu__time_duration.sum" and recs[k].ms * 1e6 or k end
        per[k] = v
      end
    end
  end
  return { per_kernel = per, passes = passes, chip = "SIM", dropped = 0, replay = "user", passes_run = passes }
end
function M.launch(fn, grid, block, smem, params)
  if M.fail_next then
    local f = M.fail_next
    M.fail_next = nil
    return nil, f.msg, f.fatal
  end
  local m = owner[fn]
  if m and m.ptr == nil then return nil, "invalid resource handle (the function's module was unloaded)" end
  M.launches = M.launches + 1
  -- A full collection before every launch: parameter slots that are not anchored to
  -- their array would be freed here, and the kernel would read garbage.
  if not M.timing then collectgarbage("collect") end
  local c0 = os.clock()
  fn(params, grid, block)
  if records then records[#records + 1] = { name = "k" .. #records, ms = (os.clock() - c0) * 1e3 + 1e-4 } end
  return true
end
function M.sync() return true end
-- The comparison on the "device" (kloop.worker.backend_cuda's compare_device): the masked
-- reference unmasked into a host copy, then the host comparison. M.device_compare = false
-- makes the protocol compare on the host, as without a comparison kernel.
local buf = require("kloop.core.buf")
local ffi = require("ffi")
M.device_compare = true
M.compares_on_device = 0
function M.device_compare_ready() return M.device_compare end
function M.compare_device(out, out_dtype, ref, ref_dtype, n, atol, rtol, _, check_poison, seed)
  M.compares_on_device = M.compares_on_device + 1
  local bytes = n * buf.dtype_size(ref_dtype)
  local plain = buf.host_alloc(math.ceil(bytes / 4) * 4)
  buf.mask(plain, ffi.cast("void*", ref), math.ceil(bytes / 4), seed)
  return buf.compare(ffi.cast("void*", out), out_dtype, plain, ref_dtype, n, atol, rtol, check_poison)
end
-- The reference masked where it is (backend_cuda's mask_device). M.mask_on_device =
-- false leaves it to the host, as a backend without the kernel does.
M.mask_on_device = true
function M.mask_device_ready() return M.mask_on_device end
function M.mask_device(dst, src, nwords, seed)
  if not M.mask_on_device then return nil, "no mask kernel" end
  buf.mask(ffi.cast("void*", dst), ffi.cast("void*", src), nwords, seed)
  return true
end
-- Guard zones written where they are (backend_cuda's fill_guard)
M.guards_on_device = true
function M.fill_guard_ready() return M.guards_on_device end
function M.fill_guard(ptr, nwords, seed)
  buf.guard_fill(ffi.cast("void*", ptr), nwords, seed)
  return true
end
-- Inputs drawn where they are (backend_cuda's fill_input: kloop_fill, kl_buf_fill's
-- bits): the host's fill straight into the "device" memory, with round through that
-- dtype first as kl_buf_convert does. M.inputs_on_device = false leaves them to the host.
M.inputs_on_device = true
M.inputs_drawn = 0
function M.fill_input_ready() return M.inputs_on_device end
function M.fill_input(ptr, dtype, n, used, dist, seed, round)
  M.inputs_drawn = M.inputs_drawn + 1
  local p = ffi.cast("uint8_t*", ptr)
  if round then
    local tmp = buf.host_alloc(n * buf.dtype_size(round))
    if not (buf.fill(tmp, round, n, dist, seed) and buf.convert(tmp, round, p, dtype, n)) then return nil, "fill" end
  elseif not buf.fill(p, dtype, n, dist, seed) then
    return nil, "fill"
  end
  local bytes = n * buf.dtype_size(dtype)
  if used > bytes then ffi.fill(p + bytes, used - bytes) end
  return true
end
function M.flush_cache() return true end
local t0, t1
function M.timer_start() collectgarbage("collect") M.timing = true t0 = os.clock() return true end
function M.timer_stop() t1 = os.clock() M.timing = false return true end
function M.timer_read() return (t1 - t0) * 1e3 + 1e-3 end
return M
