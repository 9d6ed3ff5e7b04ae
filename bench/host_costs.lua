-- bench/host_costs.lua: what the host's fixed steps around an evaluation cost on this
-- machine, each timed alone: NVML's queries (the worker samples clocks, temperature,
-- power and throttle reasons during the first and the last timed repetition: kl_nvml_sample), the device
-- handle's lookup by UUID that the core now keeps, and a store write (one transaction,
-- WAL with synchronous=FULL: a commit and its fsync, as every add_candidate and
-- add_evaluation does) in a scratch database under DIR.
-- usage: kloop bench/host_costs.lua [N] [DIR]    (prints a table; no GPU: NVML rows skipped)
local core = require("kloop.core.ffi")
local sys = require("kloop.core.sys")
local gpu = require("kloop.core.gpu")
local dbmod = require("kloop.store.db")
local ffi, C = core.ffi, core.C

local n = tonumber(arg[1]) or 200
local dir = arg[2] or "."

local rows = {}
local function row(what, seconds, calls)
  rows[#rows + 1] = string.format("%-44s %10.1f us", what, 1e6 * seconds / calls)
end

-- median of fn()'s wall time over n calls
local function per_call(fn)
  local t = {}
  for i = 1, n do
    local t0 = sys.now()
    fn()
    t[i] = sys.now() - t0
  end
  table.sort(t)
  return t[math.floor((n + 1) / 2)]
end

local info = gpu.probe(0)
if info then
  local ok, lib = pcall(ffi.load, "libnvidia-ml.so.1")
  if ok then
    ffi.cdef [[
      int nvmlInit_v2(void);
      int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev);
      int nvmlDeviceGetHandleByIndex_v2(unsigned idx, void **dev);
      int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz);
      int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c);
      int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
      int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r);
    ]]
    assert(lib.nvmlInit_v2() == 0, "nvmlInit failed")
    local d, u, ull = ffi.new("void*[1]"), ffi.new("unsigned[1]"), ffi.new("unsigned long long[1]")
    local uuid = info.uuid
    row("nvmlDeviceGetHandleByUUID", per_call(function() lib.nvmlDeviceGetHandleByUUID(uuid, d) end), 1)
    row("nvmlDeviceGetHandleByIndex", per_call(function() lib.nvmlDeviceGetHandleByIndex_v2(0, d) end), 1)
    local h = d[0]
    row("nvmlDeviceGetClockInfo (SM)", per_call(function() lib.nvmlDeviceGetClockInfo(h, 1, u) end), 1)
    row("nvmlDeviceGetClockInfo (memory)", per_call(function() lib.nvmlDeviceGetClockInfo(h, 2, u) end), 1)
    row("nvmlDeviceGetTemperature", per_call(function() lib.nvmlDeviceGetTemperature(h, 0, u) end), 1)
    row("nvmlDeviceGetPowerUsage", per_call(function() lib.nvmlDeviceGetPowerUsage(h, u) end), 1)
    row("nvmlDeviceGetCurrentClocksEventReasons", per_call(function()
      lib.nvmlDeviceGetCurrentClocksEventReasons(h, ull) end), 1)
  end
  local s, e = ffi.new("kl_gpu_sample"), ffi.new("kl_err")
  row("kl_nvml_sample (the worker's, handle kept)", per_call(function() C.kl_nvml_sample(uuid, 0, s, e) end), 1)
else
  rows[#rows + 1] = "(no GPU here: NVML not measured)"
end

local path = string.format("%s/host_costs_%d.db", dir, tonumber(sys.getpid()))
os.remove(path)
local db = assert(dbmod.open(path))
assert(db:exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)"))
local payload = string.rep("x", 2000)
row("store write (one transaction, its fsync)", per_call(function()
  db:batch(function() return db:write("INSERT INTO t (v) VALUES (?)", payload) end)
end), 1)
db:close()
for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end

print(string.format("HOST_COSTS (median of %d calls each)", n))
for _, r in ipairs(rows) do print(r) end
