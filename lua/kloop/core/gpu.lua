-- kloop.core.gpu: GPU facts: the probe (a forked child, so this process never
-- initializes CUDA), the one reading of a kl_gpu_info, the datasheet rates behind the
-- physical floor, the occupancy limits per compute capability, and the ceilings
-- measured once per GPU. The only Lua code outside the CUDA backend that reads kl_gpu_info.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- A kl_gpu_info (filled by the probe or by the worker's kl_cuda_info) as a table.
M.COMPUTE_MODES = { [0] = "default", [2] = "prohibited", [3] = "exclusive_process" }

function M.from_info(info)
  return {
    driver_version = info.driver_version,
    device_count = info.device_count,
    name = ffi.string(info.name),
    cc = info.cc_major * 10 + info.cc_minor,
    arch = string.format("sm_%d%d", info.cc_major, info.cc_minor),
    sm_count = info.sm_count,
    l2_bytes = info.l2_bytes,
    smem_per_block = info.smem_per_block,
    smem_per_block_optin = info.smem_per_block_optin,
    smem_per_sm = info.smem_per_sm,
    max_threads_per_block = info.max_threads_per_block,
    regs_per_block = info.regs_per_block,
    clock_khz = info.clock_khz,
    mem_clock_khz = info.mem_clock_khz,
    mem_bus_width = info.mem_bus_width,
    warp_size = info.warp_size,
    -- (a timing child beside the worker needs "default": kloop.eval.library)
    compute_mode = M.COMPUTE_MODES[info.compute_mode] or "unknown",
    total_mem = tonumber(info.total_mem),
    uuid = ffi.string(info.uuid),
  }
end

-- GPU facts from a forked probe: the table, or nil, msg, status.
function M.probe(device, timeout_ms)
  local info = ffi.new("kl_gpu_info")
  local err = ffi.new("kl_err")
  local st = C.kl_cuda_probe_isolated(device or 0, info, timeout_ms or 20000, err)
  if st ~= 0 then return nil, ffi.string(err.msg), st end
  return M.from_info(info)
end

-- The arch NVML names for GPU `index` ("sm_90"), without a CUDA context (20 ms on the
-- H200, against 0.1-0.3 s for the probe's cuInit), or nil; nil too where NVML's GPUs
-- differ in arch (its order need not be CUDA's: CUDA_VISIBLE_DEVICES). A hint only:
-- what compiles for it is compiled again when the worker's hello names another arch.
function M.arch_hint(index)
  local ma, mi = ffi.new("int[1]"), ffi.new("int[1]")
  local err = ffi.new("kl_err")
  local archs = {}
  for i = 0, 63 do
    if C.kl_nvml_compute_capability(i, ma, mi, err) ~= 0 then break end
    archs[i] = string.format("sm_%d%d", ma[0], mi[0])
    -- (several GPUs of different archs: NVML's index need not be CUDA's device, so none)
    if archs[i] ~= archs[0] then return nil end
  end
  return archs[index or 0]
end

-- A driver version number (13000) as the user reads it ("13.0").
function M.driver_version_string(v)
  return string.format("%d.%d", math.floor(v / 1000), math.floor((v % 1000) / 10))
end

-- ---- The datasheet ----
-- Peak rates per SM per clock by compute capability and unit (flop/clk/SM), for the
-- physical floor. Unknown chips get a generous guess so the floor never lies.
M.RATES = {
  [90] = { fp32 = 256, tf32 = 2048, fp16 = 4096, bf16 = 4096, fp8 = 8192, fp64 = 128 },
  [80] = { fp32 = 128, tf32 = 1024, fp16 = 2048, bf16 = 2048, fp64 = 64 },
}

-- Datasheet peaks of a probed GPU for a unit ("fp32", ...): {flops = FLOP/s, bytes = B/s}.
function M.datasheet_peaks(gpu, unit)
  local rates = M.RATES[tonumber(gpu.arch:match("sm_(%d+)"))] or {}
  local per_clk = rates[unit or "fp32"] or 16384
  local flops = gpu.sm_count * per_clk * gpu.clock_khz * 1e3
  local bw = gpu.mem_clock_khz * 1e3 * 2 * gpu.mem_bus_width / 8
  return { flops = flops, bytes = bw }
end

-- Occupancy limits per compute capability: warps, blocks and registers per SM, the
-- register allocation unit (per warp) and the shared memory an SM can give blocks.
M.LIMITS = {
  [90] = { warps = 64, blocks = 32, regs = 65536, reg_unit = 256, smem = 233472, smem_reserved = 1024 },
  [80] = { warps = 64, blocks = 32, regs = 65536, reg_unit = 256, smem = 167936, smem_reserved = 1024 },
  [89] = { warps = 48, blocks = 24, regs = 65536, reg_unit = 256, smem = 102400, smem_reserved = 1024 },
  [86] = { warps = 48, blocks = 16, regs = 65536, reg_unit = 256, smem = 102400, smem_reserved = 1024 },
}

-- The limits of an arch ("sm_90"), or nil for a chip kloop does not know.
function M.limits(arch)
  local cc = tonumber(tostring(arch or ""):match("sm_(%d+)"))
  return cc and M.LIMITS[cc]
end

-- ---- Measured ceilings ----
-- Eight independent FMA chains per thread, so the pipelines never wait on a result.
M.fma_source = [[
extern "C" __global__ void fma_peak(float *out, int iters, float a, float b) {
  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
  for (int i = 0; i < iters; ++i) {
    x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
    x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
]]

-- The cache of measured peaks of one GPU: folder, file (under the compile cache).
function M.peaks_cache_path(gpu, cache_dir)
  local dir = cache_dir:gsub("/cubin$", "/peaks")
  return dir, dir .. "/" .. (gpu.uuid ~= "" and gpu.uuid or gpu.name:gsub("%W", "_")) .. ".json"
end

return M
