-- tests/gpu/compare.lua: A/B comparison on the GPU: the naive gemm against the
-- coalesced one, interleaved (the ratio must show the known gap), then the coalesced
-- one against itself, 30 times: its CI must contain 1 in at least 95% of them (label gpu).
local core = require("kloop.core.api")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local util = require("kloop.util")
local ev = assert(kloop.evaluator("tests/adversarial/gemm_small.lua", { timing = { budget = 1.0 } }))
local good = assert(util.read_file("tests/adversarial/good.cu"))
local r = ev:compare(nil, good)
local function fail(msg) ev:close() io.stderr:write("FAIL: ", msg, "\n") os.exit(1) end
if r.a.verdict ~= "ok" or r.b.verdict ~= "ok" then fail("verdicts " .. r.a.verdict .. " / " .. r.b.verdict) end
if r.a.reps ~= r.b.reps then fail("not interleaved: " .. r.a.reps .. " vs " .. r.b.reps .. " reps") end
if not (r.ratio > 2 and r.ratio_ci[1] > 2) then fail("naive/coalesced ratio " .. r.ratio) end
print(string.format("PASS: naive %.4f ms vs coalesced %.4f ms at 1024^3: ratio %.2f (95%% CI %.2f..%.2f), %d interleaved reps each (%s)",
  r.a.time_ms, r.b.time_ms, r.ratio, r.ratio_ci[1], r.ratio_ci[2], r.a.reps, r.order))
-- the same kernel on both sides: no order, warm-up or statistic may favour one
local inside, lo_min, hi_max, rows = 0, math.huge, 0, {}
for i = 1, 30 do
  local s = ev:compare(good, good, { timing = { budget = 0.3 } })
  if s.a.verdict ~= "ok" or s.b.verdict ~= "ok" then fail("self A/B " .. i .. ": " .. s.a.verdict .. " / " .. s.b.verdict) end
  local ok = s.ratio_ci[1] <= 1 and s.ratio_ci[2] >= 1
  if ok then inside = inside + 1 end
  lo_min, hi_max = math.min(lo_min, s.ratio_ci[1]), math.max(hi_max, s.ratio_ci[2])
  if not ok or i <= 3 then
    rows[#rows + 1] = string.format("  #%-2d ratio %.4f  CI [%.4f, %.4f]  %d reps%s", i, s.ratio, s.ratio_ci[1], s.ratio_ci[2],
      s.a.reps, ok and "" or "  (excludes 1)")
  end
end
ev:close()
print("self A/B of the coalesced gemm, 30 trials:")
for _, line in ipairs(rows) do print(line) end
-- A 95% CI contains 1 in 25 or fewer of 30 trials with probability 1.6% (binomial):
-- fewer than 26 says the coverage is below 95%.
print(string.format("%s: %d of 30 CIs contain 1 (need >= 26); CIs within [%.4f, %.4f]", inside >= 26 and "PASS" or "FAIL",
  inside, lo_min, hi_max))
if inside < 26 then os.exit(1) end
