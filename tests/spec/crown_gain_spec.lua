-- tests/spec/crown_gain_spec.lua: a new best needs its A/B's ratio CI above 1 +
-- --crown-gain (default 0.005), so an A/B of near-copies whose CI misses 1 by noise
-- (about one in 50) crowns nothing; --crown-gain 0 crowns on the CI alone. A candidate
-- whose code is the best's (kloop.eval.evaluator code_id) gets no A/B at all. The
-- evaluator is a double whose A/B gives a chosen CI.
local driver = require("kloop.search.driver")

local function ctx_with(ci, gain)
  local ev = { compares = 0 }
  function ev:backend() return "cuda" end
  function ev:evaluate(src) return { verdict = "ok", time_ms = 1, stage = "full", code_id = src:match("^[^/]*") } end
  function ev:compare()
    self.compares = self.compares + 1
    return { a = { verdict = "ok", time_ms = 1.003 }, b = { verdict = "ok", time_ms = 1 }, ratio = (ci[1] + ci[2]) / 2,
      ratio_ci = ci, blocks = 6, order = "ABBA" }
  end
  local ctx = setmetatable({ ev = ev, history = {}, verdicts = {}, stages = {}, done_keys = {},
    opts = { quiet = true, profile = "none", timing_budget = 0.1, cascade = "off", budget = 10, crown_gain = gain } },
    driver.Ctx)
  local base = { source = "base", proposer = "baseline" }
  ctx:evaluate(base)
  ctx.baseline = base
  base.result.time_ms = 2 -- (the candidate's median beats it: an A/B decides)
  return ctx, base
end

describe("--crown-gain", function()
  it("refuses a crown whose CI lies above 1 but not above 1 + the gain", function()
    local ctx, base = ctx_with({ 1.001, 1.004 }, nil) -- (nil: the default, 0.005)
    local c = { source = "copy", proposer = "test" }
    local r = ctx:evaluate(c)
    assert.is_false(r.ab.faster)
    assert.is_false(r.crowned)
    assert.are.equal(base, ctx.best)
    assert.matches("not more than 0.5%% faster", r.ab.why)
    assert.are.equal(0.005, r.ab.gain)
  end)

  it("crowns above the gain, and on the CI alone with --crown-gain 0", function()
    local ctx = ctx_with({ 1.006, 1.01 }, 0.005)
    local c = { source = "faster", proposer = "test" }
    assert.is_true(ctx:evaluate(c).crowned)
    assert.are.equal(c, ctx.best)
    ctx = ctx_with({ 1.001, 1.004 }, 0)
    c = { source = "copy", proposer = "test" }
    assert.is_true(ctx:evaluate(c).crowned)
  end)

  it("runs no A/B for a candidate whose code is the best's, and crowns none", function()
    local ctx, base = ctx_with({ 1.5, 1.6 }, 0.005)
    local c = { source = "base// a comment", proposer = "test" }
    local r = ctx:evaluate(c)
    assert.are.equal(0, ctx.ev.compares)
    assert.is_true(r.ab.same_code)
    assert.is_false(r.crowned)
    assert.are.equal(base, ctx.best)
    assert.matches("same machine code", require("kloop.search.progress").ab_text(r.ab))
    -- other code: the A/B runs and decides
    c = { source = "other", proposer = "test" }
    assert.is_true(ctx:evaluate(c).crowned)
    assert.are.equal(1, ctx.ev.compares)
  end)
end)

describe("a candidate's code id", function()
  local evaluator = require("kloop.eval.evaluator")
  local util = require("kloop.util")
  local dir = os.tmpname()
  os.remove(dir)
  util.mkdir_p(dir)
  local function bin(name, bytes) util.write_file(dir .. "/" .. name, bytes) return dir .. "/" .. name end
  local function built(...)
    local out = {}
    for i, p in ipairs({ ... }) do out[i] = { job = { cubin_path = p } } end
    return out
  end
  it("is one for the same images, plans and arguments, another when any differs", function()
    local a, a2, b = bin("a", "same code"), bin("a2", "same code"), bin("b", "other code")
    local plans = { bench = { { grid = { 16 }, block = { 256 } } } }
    local id = evaluator.code_id(built(a), plans, {})
    assert.is_string(id)
    assert.are.equal(id, evaluator.code_id(built(a2), { bench = { { block = { 256 }, grid = { 16 } } } }, {}))
    assert.are_not.equal(id, evaluator.code_id(built(b), plans, {}), "another binary")
    assert.are_not.equal(id, evaluator.code_id(built(a), { bench = { { grid = { 32 }, block = { 128 } } } }, {}),
      "another launch (kloop_block)")
    assert.are_not.equal(id, evaluator.code_id(built(a), plans, { [1] = { [4] = { value = 3 } } }), "other arguments")
    assert.is_nil(evaluator.code_id(built(dir .. "/missing"), plans, {}))
  end)

  it("tells a cubin's kernel attributes apart: launch bounds, a register cap", function()
    local compile = require("kloop.eval.compile")
    local src = "extern \"C\" __global__ void k(float *y) { y[threadIdx.x] += 1.0f; }\n"
    local function id(text, o)
      local j = compile.compile(text, { arch = "sm_90", name = "k.cu", options = o })
      assert.is_true(j.ok, tostring(j.log))
      return compile.image_id(util.read_file(j.cubin_path))
    end
    local plain = id(src)
    assert.are.equal(plain, id(src .. "// a comment\n"))
    assert.are_not.equal(plain, id((src:gsub("__global__ void", "__global__ void __launch_bounds__(128)"))),
      "__launch_bounds__ lives in .nv.info only")
    assert.are_not.equal(plain, id(src, { "--maxrregcount=16" }))
  end)

  it("reads an ELF image by its loaded sections: a host binary built from a comment-only change is the same", function()
    local compile = require("kloop.eval.compile")
    local ch = require("kloop.eval.compile_host")
    local src = "void f(int n, float *y) { for (int i = 0; i < n; ++i) y[i] += 1.0f; }\n"
    local j1 = ch.compile(src, { name = "one.c" })
    local j2 = ch.compile(src .. "// a comment\n", { name = "two.c" })
    local j3 = ch.compile((src:gsub("1.0f", "2.0f")), { name = "three.c" })
    assert.is_true(j1.ok and j2.ok and j3.ok, tostring(j1.log))
    local i1, i2, i3 = util.read_file(j1.cubin_path), util.read_file(j2.cubin_path), util.read_file(j3.cubin_path)
    assert.are_not.equal(i1, i2, "the files themselves differ (the source's name)")
    assert.are.equal(compile.image_id(i1), compile.image_id(i2))
    assert.are_not.equal(compile.image_id(i1), compile.image_id(i3))
  end)
end)
