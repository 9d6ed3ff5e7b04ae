-- tests/gpu/compare_device.lua: outputs compared on the GPU against the masked reference
-- (issue 15) give the verdicts and evidence of the host comparison, and cost less. Each
-- task is evaluated by two evaluators, device comparison on and off, on the same
-- candidates: the baseline, a wrong one and (stencil) one that clears the halo. Label gpu.
local core = require("kloop.core.api")
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local util = require("kloop.util")
local sys = require("kloop.core.sys")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end

local failures = 0
local function check(cond, fmt, ...)
  if not cond then
    failures = failures + 1
    print("FAIL: " .. string.format(fmt, ...))
  end
end

local cases = {
  { task = "kernels/saxpy.lua", wrong = function(src) return (src:gsub("out%[i%] = a", "out[i] = (i == 54321) ? 0.0f : a")) end },
  { task = "kernels/stencil.lua", extra = { halo = util.read_file("bench/candidates/stencil_bad_halo.cu") } },
}
print(string.format("%-8s %-10s %-10s %-10s %8s %8s %4s  %s", "task", "candidate", "host", "device", "host s", "dev s",
  "ndev", "reason"))
for _, c in ipairs(cases) do
  local task = assert(taskmod.load(c.task))
  local cands = { { "baseline", task.source } }
  if c.wrong then
    local w = c.wrong(task.source)
    check(w ~= task.source, "%s: the wrong variant did not change the source", c.task)
    cands[#cands + 1] = { "wrong", w }
  end
  for name, src in pairs(c.extra or {}) do cands[#cands + 1] = { name, src } end
  -- one secret for both: the same inputs, so the same elements are wrong on both sides
  local secret = "compare_device/" .. task.name .. "/" .. tostring(sys.now())
  local evs = { host = eval.new(task, { device_compare = false, secret = secret }), device = eval.new(task, { secret = secret }) }
  for _, cand in ipairs(cands) do
    local r, t = {}, {}
    for _, mode in ipairs({ "host", "device" }) do
      local t0 = sys.now()
      r[mode] = evs[mode]:evaluate(cand[2], { timing = { budget = 0.2 } })
      t[mode] = sys.now() - t0
    end
    local h, d = r.host, r.device
    print(string.format("%-8s %-10s %-10s %-10s %8.2f %8.2f %4d  %s", task.name, cand[1], h.verdict, d.verdict, t.host,
      t.device, d.device_compares or 0, (d.reason or ""):sub(1, 80)))
    check(h.verdict == d.verdict, "%s %s: host %s, device %s (%s)", task.name, cand[1], h.verdict, d.verdict,
      tostring(d.reason))
    if h.verdict ~= "ok" then
      local he, de = h.evidence or {}, d.evidence or {}
      check(he.index == de.index and he.case == de.case, "%s %s: evidence differs: host %s at %s, device %s at %s",
        task.name, cand[1], tostring(he.case), tostring(he.index), tostring(de.case), tostring(de.index))
    end
    check((cand[1] == "baseline") == (d.verdict == "ok"), "%s %s: verdict %s", task.name, cand[1], d.verdict)
    -- which path ran: the host evaluator never compares on the device; the device one does
    -- at the bench size (a candidate refused at a small size may not get there)
    check(not h.device_compares, "%s %s: the host evaluator compared on the device", task.name, cand[1])
    if d.verdict == "ok" then
      check((d.device_compares or 0) >= 2, "%s %s: %s comparisons on the device (the bench size's two sets at least)",
        task.name, cand[1], tostring(d.device_compares))
    end
  end
  evs.host:close()
  evs.device:close()
end
if failures > 0 then os.exit(1) end
print("PASS: comparisons on the device agree with the host's")
