-- tests/gpu/compare.lua: A/B comparison on the GPU: the naive gemm against the
-- coalesced one, interleaved; the ratio must show the known gap (label gpu).
local core = require("kloop.core.api")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
local util = require("kloop.util")
local ev = assert(kloop.evaluator("tests/adversarial/gemm_small.lua", { timing = { budget = 1.0 } }))
local good = assert(util.read_file("tests/adversarial/good.cu"))
local r = ev:compare(nil, good)
ev:close()
local function fail(msg) io.stderr:write("FAIL: ", msg, "\n") os.exit(1) end
if r.a.verdict ~= "ok" or r.b.verdict ~= "ok" then fail("verdicts " .. r.a.verdict .. " / " .. r.b.verdict) end
if r.a.reps ~= r.b.reps then fail("not interleaved: " .. r.a.reps .. " vs " .. r.b.reps .. " reps") end
if not (r.ratio > 2 and r.ratio_ci[1] > 2) then fail("naive/coalesced ratio " .. r.ratio) end
print(string.format("PASS: naive %.4f ms vs coalesced %.4f ms at 1024^3: ratio %.2f (95%% CI %.2f..%.2f), %d interleaved reps each",
  r.a.time_ms, r.b.time_ms, r.ratio, r.ratio_ci[1], r.ratio_ci[2], r.a.reps))
