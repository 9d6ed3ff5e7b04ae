-- tests/spec/sizes_defines_spec.lua: sizes compiled in (issue 16 item 6): a task's
-- `sizes_as_defines` checked at load (type, names, a parameter of the same name, a kernel
-- or reference that #defines a size itself), one binary per size for the candidate and
-- the reference, each case run from its own module (its symbols included), a kernel
-- that hard-codes the bench size refused at the other sizes, compile errors naming the
-- size, the cache (a second evaluation compiles nothing), A/B; on the host backend (a
-- real sandboxed worker, cc), the sim evaluator, and the CUDA compile path (NVRTC, no GPU).
local taskmod = require("kloop.eval.task")
local eval = require("kloop.eval.evaluator")
local compile = require("kloop.eval.compile")
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local nvrtc = require("kloop.core.nvrtc")
local simev = require("tests.spec.support.sim_evaluator")

local dir = os.tmpname()
os.remove(dir)
assert(util.mkdir_p(dir))
local function write(name, text) assert(util.write_file(dir .. "/" .. name, text)) return dir .. "/" .. name end

-- out[i] = 2 x[i] for i < N, N compiled in (the kernel takes no size argument)
local GUARD = "#ifndef N\n#define N 4096\n#endif\n"
local KERNEL = GUARD .. "void dbl(const float *x, float *out) { for (int i = 0; i < N; ++i) out[i] = 2.0f * x[i]; }\n"
local REF = GUARD .. "void dbl_ref(const float *x, double *out) { for (int i = 0; i < N; ++i) out[i] = 2.0 * x[i]; }\n"
local SIDE = [[
return kloop.task {
  name = "dbl", entry = "dbl", kernel = "dbl.c",
  args = { { "x", "const float*", size = "N" }, { "out", "float*", size = "N", output = true } },
  sizes = { bench = { N = 64 }, check = { { N = 100 }, { N = 5 } } },
  sizes_as_defines = %s,
  %s
  reference = { source = "dbl_ref.c", entry = "dbl_ref", precision = "f64" },
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
]]

local function load(field, kernel, ref, extra)
  write("dbl.c", kernel or KERNEL)
  write("dbl_ref.c", ref or REF)
  return taskmod.load(write("dbl.lua", SIDE:format(field, extra or "")))
end

local function refusal(...)
  local task, err = load(...)
  assert.is_nil(task, "expected a refusal")
  return err
end

describe("sizes_as_defines at load", function()
  it("takes true (every size) or a list of size names", function()
    assert.are.same({ "N" }, assert(load("true")).sizes_as_defines)
    assert.are.same({ "N" }, assert(load('{ "N" }')).sizes_as_defines)
    assert.is_nil(assert(load("false")).sizes_as_defines)
    -- every name of the size table, sorted, at each size
    local t = assert(load("true"))
    assert.are.same({ N = 100, BS = 8 }, taskmod.size_defines(t, { N = 100 }, { BS = 8 }))
  end)

  it("refuses, naming the file, the field and the fix", function()
    assert.matches('dbl.lua: sizes_as_defines: expected true or a list of size names, got the string "yes" (fix: sizes_as_defines = true',
      refusal('"yes"'), 1, true)
    assert.matches("sizes_as_defines[1]: 'NN' is not a size of this task (sizes.bench has N); did you mean 'N'? (fix: rename it N)",
      refusal('{ "NN" }'), 1, true)
    assert.matches("sizes_as_defines[2]: 'N' is listed twice", refusal('{ "N", "N" }'), 1, true)
    assert.matches("sizes_as_defines: the list is empty", refusal("{}"), 1, true)
    assert.matches("sizes_as_defines[1]: expected a size name, got the number 3", refusal("{ 3 }"), 1, true)
    assert.matches("sizes_as_defines: 'N' is a size and a tunable parameter: both would be passed as -DN (fix: rename the parameter",
      refusal("true", nil, nil, "params = { N = { 8, 16 } },"), 1, true)
  end)

  it("refuses a kernel or reference that defines a size itself, outside an #ifndef guard", function()
    -- NVRTC and cc only warn about a redefinition; the kernel's value would silently win
    local hard = "#define N 64\nvoid dbl(const float *x, float *out) { for (int i = 0; i < N; ++i) out[i] = 2.0f * x[i]; }\n"
    local err = refusal("true", hard)
    assert.matches("sizes_as_defines: " .. dir .. "/dbl.c:1 defines N outside an #ifndef N guard: its own value would win",
      err, 1, true)
    assert.matches("(fix: guard it: #ifndef N / #define N ... / #endif)", err, 1, true)
    assert.matches("dbl_ref.c:2 undefs N outside an #ifndef N guard",
      refusal("true", nil, "#include <stddef.h>\n#undef N\n" .. REF), 1, true)
    -- guarded forms load: #ifndef, #if !defined(N), the #else of #ifdef N
    assert.is_table(load("true", "#if !defined(N)\n#define N 4\n#endif\n" .. KERNEL))
    assert.is_table(load("true", "#ifdef N\n#else\n#define N 4\n#endif\n" .. KERNEL))
    -- but not the #else of an #ifndef, nor a define after the guard closed
    assert.matches("dbl.c:3 defines N", refusal("true", "#ifndef N\n#else\n#define N 4\n#endif\n" .. KERNEL), 1, true)
    assert.matches("dbl.c:4 defines N", refusal("true", GUARD .. "#define N 8\n" .. KERNEL), 1, true)
    -- a name not compiled in may be defined freely
    assert.is_nil((taskmod.unguarded_define("#define M 3\n#define N_2 4\n", { "N" })))
    assert.are.same({ 2, "N", "define" }, { taskmod.unguarded_define("// #define N 1\n # define N 2 /* x */\n", { "N" }) })
  end)
end)

describe("sizes compiled in, host backend (a real worker)", function()
  local task, ev
  setup(function()
    task = assert(load("true"))
    ev = eval.new(task, { timing = { budget = 0.05 } })
  end)
  teardown(function() if ev then ev:close() end end)

  it("compiles the candidate and the reference once per size, and verifies each size", function()
    local req, failed = ev:prepare(task.source, {})
    assert.is_table(req, failed and failed.reason)
    local paths = {}
    for _, label in ipairs({ "check1", "check2", "bench" }) do
      assert.is_string(req.cubins[label])
      paths[req.cubins[label]] = true
    end
    assert.are.equal(3, util.count and util.count(paths) or #util.sorted_keys(paths))
    assert.are.equal(req.cubins.bench, req.cubin)
    local r = ev:evaluate(nil, { timing = { budget = 0.05 } })
    assert.are.equal("ok", r.verdict, r.reason)
    -- the reference got the sizes too: one binary per case (at N = 4096 it would overrun)
    assert.are.equal(3, #ev.ref_jobs)
    assert.are_not.equal(ev.ref_jobs[1].job.cubin_path, ev.ref_jobs[3].job.cubin_path)
  end)

  it("refuses a kernel that hard-codes the bench size, at the size it fails", function()
    local r = ev:evaluate("void dbl(const float *x, float *out) { for (int i = 0; i < 64; ++i) out[i] = 2.0f * x[i]; }", {})
    assert.are.equal("unwritten", r.verdict, r.reason)
    assert.matches("(check1, input set 1)", r.reason, 1, true)
    -- one that defines the size itself (its value would win) is refused before compiling
    r = ev:evaluate("#define N 64\n" .. KERNEL, {})
    assert.are.equal("rejected", r.verdict)
    assert.matches("line 1 defines N outside an #ifndef N guard, but N is a size the task compiles in", r.reason, 1, true)
  end)

  it("names the size a compile error happens at", function()
    local r = ev:evaluate("#if N == 5\n#error too small\n#endif\n" .. KERNEL, {})
    assert.are.equal("compile_error", r.verdict)
    assert.are.equal("does not compile at check2 (N=5)", r.reason)
    assert.matches("too small", r.log, 1, true)
    assert.are.equal("check2", r.evidence.case)
  end)

  it("compiles nothing the second time (the cache)", function()
    local src = KERNEL .. "/* cache " .. sys.content_hash(tostring(sys.now())) .. " */\n"
    local r1 = ev:evaluate(src, { timing = { budget = 0.05 } })
    assert.are.equal("ok", r1.verdict, r1.reason)
    assert.is_false(r1.compile_cached)
    local r2 = ev:evaluate(src, { timing = { budget = 0.05 } })
    assert.are.equal("ok", r2.verdict, r2.reason)
    assert.is_true(r2.compile_cached)
    assert.are.equal(0, r2.compile_seconds)
  end)

  it("compares two candidates, each from its own binaries", function()
    local c = ev:compare(nil, KERNEL .. "/* b */\n", { timing = { budget = 0.05 } })
    assert.are.equal("ok", c.a.verdict, c.a.reason)
    assert.are.equal("ok", c.b.verdict, c.b.reason)
    assert.is_number(c.ratio)
    -- a side that is wrong at one size is refused there; the other is verified, not timed
    c = ev:compare(nil, "void dbl(const float *x, float *out) { for (int i = 0; i < 64; ++i) out[i] = 2.0f * x[i]; }",
      { timing = { budget = 0.05 } })
    assert.are.equal("not_run", c.a.verdict, c.a.reason)
    assert.are.equal("unwritten", c.b.verdict)
    assert.matches("(check1, input set 1)", c.b.reason, 1, true)
  end)

  it("kloop compile builds the bench size, or every size with --all-sizes", function()
    local exe = util.shell_quote(sys.exe_path())
    local out = util.capture(exe .. " compile " .. util.shell_quote(dir .. "/dbl.lua") .. " 2>&1")
    assert.matches("^dbl%.c: ok %(host, [%d.]+ s[^)]*%) at bench %(N=64%)$", out)
    out = util.capture(exe .. " compile " .. util.shell_quote(dir .. "/dbl.lua") .. " --all-sizes 2>&1")
    local labels = {}
    for l in out:gmatch("at (%w+) %(N=%d+%)") do labels[#labels + 1] = l end
    assert.are.same({ "check1", "check2", "bench" }, labels)
  end)
end)

describe("sizes compiled in, sim evaluator", function()
  local HEAD = [[
local ffi = require("ffi")
local function ptr(p, i, ct) return ffi.cast(ct, ffi.cast("uint64_t*", p[i])[0]) end
]]
  -- y[i] = filter[i % 5] * x[i] for i < N: N from the module's compiled-in defines, the
  -- filter a symbol of each module (so each case's module must get the set's values)
  local function kernel(name, n_expr, ytype)
    return HEAD .. string.format([[
-- __constant__ float filter[5]; extern "C" __global__ void %s(%s *y, const float *x);
return { globals = { filter = 20 }, %s = function(p, grid, block, g)
  local y, x = ptr(p, 0, "%s*"), ptr(p, 1, "float*")
  local f = ffi.cast("float*", g.filter)
  for i = 0, %s - 1 do y[i] = f[i %% 5] * x[i] end
end }
]], name, ytype or "float", name, ytype or "float", n_expr)
  end
  local RIGHT = kernel("sc", "KLOOP_DEFINES.N")
  write("sc.sim", RIGHT)
  write("sc_ref.sim", kernel("sc_ref", "KLOOP_DEFINES.N", "double"))
  local task = assert(simev.load_task(write("sc.lua", [[
return kloop.task {
  name = "sc", entry = "sc", kernel = "sc.sim",
  args = { { "y", "float*", size = "N", output = true }, { "x", "const float*", size = "N" } },
  symbols = { { "filter", "float", count = 5, init = "uniform(1,2)" } },
  sizes = { bench = { N = 64 }, check = { { N = 100 }, { N = 5 } } },
  sizes_as_defines = true,
  launch = { grid = { 1 }, block = { 1 } },
  reference = { source = "sc_ref.sim", entry = "sc_ref", precision = "f64" },
  flush_cache = false,
  cost = function(s) return { flops = s.N, bytes = 8 * s.N } end,
}
]])))

  it("runs each case from its own module, its symbols filled there", function()
    local ev = simev.new(task)
    local r = ev:evaluate(RIGHT, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    -- the bench size hard-coded: unwritten at N = 100 (check1)
    r = ev:evaluate(kernel("sc", "64"), {})
    assert.are.equal("unwritten", r.verdict, r.reason)
    assert.are.equal("check1", r.evidence.case)
    -- a module that reads a size other than its own would overrun at N = 5 (check2)
    r = ev:evaluate(kernel("sc", "(KLOOP_DEFINES.N == 5 and 6 or KLOOP_DEFINES.N)"), {})
    assert.are.equal("out_of_bounds", r.verdict, r.reason)
    ev:close()
  end)

  it("compiles nothing for a candidate it has built (the cache), and compares", function()
    local ev = simev.new(task)
    local src = RIGHT .. "\n-- again"
    assert.are.equal("ok", ev:evaluate(src, { timing = { budget = 0 } }).verdict)
    local before = simev.compiles
    local r = ev:evaluate(src, { timing = { budget = 0 } })
    assert.are.equal("ok", r.verdict, r.reason)
    assert.are.equal(before, simev.compiles)
    assert.is_true(r.compile_cached)
    local c = ev:compare(RIGHT, src, { timing = { budget = 0 } })
    assert.are.equal("ok", c.a.verdict, c.a.reason)
    assert.are.equal("ok", c.b.verdict, c.b.reason)
    ev:close()
  end)
end)

describe("sizes compiled in, the CUDA compile path (kernels/transpose.lua, no GPU)", function()
  local has_nvrtc = nvrtc.version() ~= nil
  local task = assert(taskmod.load("kernels/transpose.lua"))

  it("builds one cubin per size, in the background from precompile, cached afterwards", function()
    if not has_nvrtc then pending("no NVRTC here") return end
    local ev = eval.new(task, { secret = "s" })
    ev.arch = "sm_90"
    ev.start = function() return true end -- (precompile needs no worker for this)
    local point = { TILE = 32, ROWS = 4 }
    local key = "/* " .. sys.content_hash(tostring(sys.now())) .. " */\n"
    ev:precompile({ { source = task.source .. key, defines = point } })
    -- every case's job is in the background registry (running or queued)
    local bg = 0
    for _ in pairs(compile.background.by_key) do bg = bg + 1 end
    assert.are.equal(5, bg)
    local built = ev:compile_all(task.source .. key, { defines = point })
    assert.are.equal(5, #built)
    local paths = {}
    for _, b in ipairs(built) do
      assert.is_true(b.job.ok, b.job.log)
      -- (compile_all started none itself: each was waited for, or found done in the cache)
      assert.is_true(b.job.waited_background == true or b.job.cached == true)
      paths[b.job.cubin_path] = true
    end
    assert.are.equal(5, #util.sorted_keys(paths))
    -- the defines of each build: the point's and the case's sizes
    local _, copts = ev:compiler(eval.with_case({ defines = point }, built[1].case), task.source)
    assert.are.same({ TILE = 32, ROWS = 4, WIDTH = 1000, HEIGHT = 37 }, copts.defines)
    for _, b in ipairs(ev:compile_all(task.source .. key, { defines = point })) do assert.is_true(b.job.cached) end
    compile.cancel_background()
  end)
end)
