-- kloop.core.blas: the wrapper of kl_blas_* (cuBLAS opened at run time) and of the few
-- CUDA calls a library timing needs: the only Lua code that calls them. Used only in
-- the short-lived child of kloop.eval.library: opening a Gemm initializes CUDA, which
-- kloop's main process never does.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C
local buf = require("kloop.core.buf")

local M = {}

local err = ffi.new("kl_err")
local function check(st)
  if st == 0 then return true end
  return nil, ffi.string(err.msg)
end

-- cuBLAS's path, or nil, msg (no CUDA context needed).
function M.load()
  local ok, msg = check(C.kl_blas_load(err))
  if not ok then return nil, msg end
  return ffi.string(C.kl_blas_path())
end

local Gemm = {}
Gemm.__index = Gemm

-- n floats of pseudo-random data in [-1, 1) (kl_buf_fill, a fixed seed: the same data
-- every run), or nil when out of host memory.
local function random_floats(n, seed)
  local p = buf.host_alloc(n * 4)
  if p and buf.fill(p, "f32", n, { kind = "uniform", a = -1, b = 1 }, seed) then return p end
  return nil
end

-- Opens CUDA on device, cuBLAS on its context, and A[m,k], B[k,n], C[m,n] on the
-- device with random data: a Gemm, or nil, msg. opts.defer_open: only cuBLAS's library
-- is loaded, the inputs drawn on the host and the driver started (cuInit); no context is
-- made (which a GPU in exclusive-process mode would give to this process alone) until
-- Gemm:open().
function M.gemm(m, n, k, device, opts)
  local ok, msg = check(C.kl_blas_load(err))
  if not ok then return nil, msg end
  local self = setmetatable({ m = m, n = n, k = k, ptrs = {}, host = {}, device = device or 0 }, Gemm)
  for i = 1, 2 do
    self.host[i] = random_floats(i == 1 and m * k or k * n, 17 + i)
    if not self.host[i] then return nil, "out of host memory for the gemm's inputs" end
  end
  if opts and opts.defer_open then
    -- (the driver's own start, cuInit, takes no context: a GPU in exclusive-process mode
    -- stays the worker's; open then only makes the context. A failure here is open's to say)
    local now = require("kloop.core.sys").now
    local t = now()
    C.kl_cuda_info(self.device, ffi.new("kl_gpu_info"), err)
    self.init_s = now() - t
    return self
  end
  return self:open()
end

-- The CUDA side of M.gemm: the context, the cuBLAS handle, the three buffers with the
-- inputs copied, two events: the Gemm, or nil, msg (closed).
-- phases (optional): gets cuda_s, blas_s and upload_s, the seconds of each step.
function Gemm:open(phases)
  local now = require("kloop.core.sys").now
  phases = phases or {}
  local t = now()
  local ok, msg = check(C.kl_cuda_init(self.device, err)) -- kl_cuda_init loads the driver
  if not ok then return nil, msg end
  phases.cuda_s = now() - t
  t = now()
  local h, ver, mode = ffi.new("void*[1]"), ffi.new("int[1]"), ffi.new("int[1]")
  ok, msg = check(C.kl_blas_create(h, ver, mode, err))
  if not ok then return nil, msg end
  self.handle, self.version, self.math_mode = h[0], ver[0], mode[0]
  self.path = ffi.string(C.kl_blas_path())
  phases.blas_s = now() - t
  t = now()
  local g, uerr = self:upload()
  phases.upload_s = now() - t
  return g, uerr
end

-- The buffers allocated, the inputs copied, two events: the Gemm, or nil, msg (closed).
function Gemm:upload()
  local ok, msg
  for i, count in ipairs({ self.m * self.k, self.k * self.n, self.m * self.n }) do
    local p = ffi.new("uint64_t[1]")
    ok, msg = check(C.kl_cuda_alloc(count * 4, p, err))
    if not ok then self:close() return nil, msg end
    self.ptrs[i] = p[0]
    if i < 3 then
      ok, msg = check(C.kl_cuda_h2d(p[0], self.host[i], count * 4, err))
      if not ok then self:close() return nil, msg end
    end
  end
  self.host = {}
  self.ev = { ffi.new("void*[1]"), ffi.new("void*[1]") }
  ok, msg = check(C.kl_cuda_event_create(self.ev[1], err))
  if ok then ok, msg = check(C.kl_cuda_event_create(self.ev[2], err)) end
  if not ok then self:close() return nil, msg end
  return self
end

-- One sgemm (row-major, alpha 1, beta 0), not waited for: true, or nil, msg.
function Gemm:call()
  local p = self.ptrs
  return check(C.kl_blas_sgemm_rm(self.handle, self.m, self.n, self.k, p[1], p[2], p[3], err))
end

-- warmup untimed calls, then reps calls each between two CUDA events: the list of
-- times in ms, or nil, msg.
function Gemm:time(warmup, reps)
  for _ = 1, warmup do
    local ok, msg = self:call()
    if not ok then return nil, msg end
  end
  local ok, msg = check(C.kl_cuda_sync(err))
  if not ok then return nil, msg end
  local times, ms = {}, ffi.new("float[1]")
  for _ = 1, reps do
    ok, msg = check(C.kl_cuda_event_record(self.ev[1][0], err))
    if ok then ok, msg = self:call() end
    if ok then ok, msg = check(C.kl_cuda_event_record(self.ev[2][0], err)) end
    if ok then ok, msg = check(C.kl_cuda_sync(err)) end
    if ok then ok, msg = check(C.kl_cuda_event_elapsed_ms(self.ev[1][0], self.ev[2][0], ms, err)) end
    if not ok then return nil, msg end
    times[#times + 1] = tonumber(ms[0])
  end
  return times
end

-- Frees the buffers and the handle (the process exits next: the context goes with it).
function Gemm:close()
  for _, p in ipairs(self.ptrs) do C.kl_cuda_free(p, err) end
  self.ptrs = {}
  if self.handle ~= nil then C.kl_blas_destroy(self.handle) end
  self.handle = nil
end

return M
