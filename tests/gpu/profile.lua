-- tests/gpu/profile.lua: `kloop profile` on the GPU (label gpu): the naive gemm, the
-- tiled gemm and saxpy (memory-bound). Checks the counters against what is known
-- independently: the event-timed median, the cost model's bytes for a streaming
-- kernel, the access pattern of the naive kernel, and the roofline side of each.
local core = require("kloop.core.api")
local cjson = require("cjson")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local exe = core.exe_path()
local failures = 0
local function fail(fmt, ...) io.stderr:write("FAIL: " .. string.format(fmt, ...) .. "\n") failures = failures + 1 end

local function profile(args)
  local p = io.popen(exe .. " profile " .. args .. " --json 2>&1")
  local out = p:read("*a")
  p:close()
  local ok, r = pcall(cjson.decode, out:match("(%b{})%s*$") or out)
  if not ok or type(r) ~= "table" then fail("%s: not JSON:\n%s", args, out) return nil end
  if r.verdict ~= "ok" or type(r.profile) ~= "table" then fail("%s: verdict %s, no profile", args, tostring(r.verdict)) return nil end
  return r, out
end

local function near(a, b, tol) return a and b and math.abs(a - b) <= tol * math.abs(b) end

local rows = {}
local function row(name, r)
  local s, m = r.profile, r.profile.metrics or {}
  rows[#rows + 1] = string.format("%-12s %10.4f %10.4f %7.1f%% %7s %6.1f%% %9.1f %6.1f %s", name, r.time_ms,
    (m["gpu__time_duration.sum"] or 0) / 1e6, 100 * (s.activity and s.activity.coverage or 0), s.bound or "?",
    100 * (s.frac or 0), (s.dram_bytes or 0) / 1e6, s.sectors_per_request or 0, #s.hints)
end

-- 1. naive gemm: compute-bound by the cost model, uncoalesced loads, one kernel
local r = profile("kernels/gemm.cu")
if r then
  local s, m = r.profile, r.profile.metrics or {}
  if s.no_counters then fail("naive gemm: no counters: %s", s.no_counters) end
  if not near(m["gpu__time_duration.sum"] / 1e6, r.time_ms, 0.05) then
    fail("naive gemm: profiled kernel time %.3f ms vs event-timed median %.3f ms (>5%%)", m["gpu__time_duration.sum"] / 1e6, r.time_ms)
  end
  if not (s.activity and s.activity.kernels == 1 and s.activity.coverage > 0.98 and s.activity.coverage < 1.02) then
    fail("naive gemm: activity %s", cjson.encode(s.activity or {}))
  end
  if s.bound ~= "compute" then fail("naive gemm: bound %s, want compute", tostring(s.bound)) end
  if not (s.sectors_per_request and s.sectors_per_request > 8) then
    fail("naive gemm: %s sectors per request: the uncoalesced loads went unseen", tostring(s.sectors_per_request))
  end
  local kinds = {}
  for _, h in ipairs(s.hints) do kinds[h.kind] = true end
  if not kinds.coalescing then fail("naive gemm: no coalescing hint") end
  if not (s.passes and s.passes >= 2) then fail("naive gemm: %s replay passes", tostring(s.passes)) end
  row("gemm naive", r)
end

-- 2. tiled gemm: compute-bound, coalesced, a good fraction of the FMA ceiling
r = profile("kernels/gemm_tiled.cu")
if r then
  local s = r.profile
  if s.bound ~= "compute" then fail("tiled gemm: bound %s", tostring(s.bound)) end
  if not (s.frac and s.frac > 0.2) then fail("tiled gemm: %.1f%% of the ceiling", 100 * (s.frac or 0)) end
  for _, h in ipairs(s.hints) do
    if h.kind == "coalescing" then fail("tiled gemm: coalescing hint on a coalesced kernel: %s", h.text) end
  end
  row("gemm tiled", r)
end

-- 3. saxpy: memory-bound; DRAM traffic equals the cost model's bytes (each byte once)
r = profile("kernels/saxpy.cu")
if r then
  local s = r.profile
  if s.bound ~= "memory" then fail("saxpy: bound %s, want memory", tostring(s.bound)) end
  if not near(s.dram_bytes, s.bytes, 0.05) then
    fail("saxpy: DRAM moved %.1f MB, the cost model says %.1f MB (>5%% apart)", (s.dram_bytes or 0) / 1e6, (s.bytes or 0) / 1e6)
  end
  if not (s.frac and s.frac > 0.6) then fail("saxpy: %.1f%% of the copy ceiling", 100 * (s.frac or 0)) end
  if not (s.activity and s.activity.kernels == 1 and s.activity.coverage > 0.9 and s.activity.coverage < 1.1) then
    fail("saxpy: kernel records cover too little of the timed interval: %s", cjson.encode(s.activity or {}))
  end
  row("saxpy", r)
end

-- 4. a metric this GPU does not have: exit 2, the name in the message
local p = io.popen(exe .. " profile kernels/saxpy.cu --metrics dram__no_such_metric.sum 2>&1; echo rc=$?")
local out = p:read("*a")
p:close()
if not (out:find("dram__no_such_metric.sum", 1, true) and out:find("rc=2", 1, true)) then
  fail("unknown metric: want exit 2 naming it, got:\n%s", out)
end

print(string.format("%-12s %10s %10s %8s %7s %7s %9s %6s %s", "kernel", "event_ms", "prof_ms", "covered", "bound",
  "ceil", "dram_MB", "sec/rq", "hints"))
for _, l in ipairs(rows) do print(l) end
if failures > 0 then os.exit(1) end
print("PASS: profile")
