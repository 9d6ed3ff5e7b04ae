-- kloop.eval.peaks: the ceilings a roofline needs, measured once per GPU and cached: device
-- copy bandwidth (bytes read + written) and float32 FMA rate. The physical floor keeps
-- the datasheet figures (kloop.eval.peaks); these measured ones say how close a kernel
-- came to what the card really does.
local util = require("kloop.util")
local compile = require("kloop.eval.compile")
local cjson = require("cjson")

local M = {}

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

local function cache_path(gpu)
  local dir = compile.cache_dir():gsub("/cubin$", "/peaks")
  return dir, dir .. "/" .. (gpu.uuid ~= "" and gpu.uuid or gpu.name:gsub("%W", "_")) .. ".json"
end

-- Measured peaks for the evaluator's GPU: {bytes = B/s, flops = FLOP/s, cached = bool},
-- or nil, why. ev must be started (its worker answers the "peaks" request).
function M.get(ev)
  local gpu = ev.gpu
  if not gpu or not gpu.uuid then return nil, "no GPU" end
  local dir, path = cache_path(gpu)
  local text = util.read_file(path)
  if text then
    local ok, t = pcall(cjson.decode, text)
    if ok and type(t) == "table" and t.bytes and t.flops then t.cached = true return t end
  end
  local job = compile.compile(M.fma_source, { arch = ev.arch, name = "fma_peak.cu" })
  if not job.ok then return nil, "the FMA kernel does not compile: " .. tostring(job.log) end
  local r, kind, msg = ev:request({ op = "peaks", cubin = job.cubin_path }, 120)
  if not r then return nil, kind .. ": " .. tostring(msg) end
  if not r.ok then return nil, tostring(r.error) end
  local out = { bytes = r.bytes, flops = r.flops, measured_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), gpu = gpu.name }
  util.mkdir_p(dir)
  util.write_file(path, cjson.encode(out))
  out.cached = false
  return out
end

return M
