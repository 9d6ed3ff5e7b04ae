-- kloop.eval.peaks: the ceilings a roofline needs, measured once per GPU and cached: device
-- copy bandwidth (bytes read + written) and float32 FMA rate. The physical floor keeps
-- the datasheet figures (kloop.core.gpu); these measured ones say how close a kernel
-- came to what the card really does.
local util = require("kloop.util")
local compile = require("kloop.eval.compile")
local cjson = require("cjson")
local gpu = require("kloop.core.gpu")

local M = {}

-- The FMA kernel and the cache file are GPU facts (kloop.core.gpu).
M.fma_source = gpu.fma_source

local function cache_path(g) return gpu.peaks_cache_path(g, compile.cache_dir()) end

-- Measured peaks for the evaluator's GPU: {bytes = B/s, flops = FLOP/s, cached = bool},
-- or nil, why. ev must be started (its worker answers the "peaks" request).
function M.get(ev)
  local g = ev.gpu
  if not g or not g.uuid then return nil, "no GPU" end
  local dir, path = cache_path(g)
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
  local out = { bytes = r.bytes, flops = r.flops, measured_at = os.date("!%Y-%m-%dT%H:%M:%SZ"), gpu = g.name }
  util.mkdir_p(dir)
  util.write_file(path, cjson.encode(out))
  out.cached = false
  return out
end

return M
