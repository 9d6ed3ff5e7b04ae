-- tests/spec/prompt_spec.lua: prompt templates: ids, versions, the context schema, rendering and its errors.
local prompt = require("kloop.prompt")
local taskmod = require("kloop.task")
local util = require("kloop.util")

local GPU = { name = "NVIDIA H200", arch = "sm_90", sm_count = 132, l2_bytes = 60 * 1048576, smem_per_block = 49152,
  smem_per_block_optin = 232448, smem_per_sm = 233472, regs_per_block = 65536, clock_khz = 1980000,
  mem_clock_khz = 2619000, mem_bus_width = 6144 }

describe("prompt templates", function()
  local task
  setup(function() task = assert(taskmod.load("kernels/gemm.cu")) end)

  it("ships optimize, fix_compile and fix_wrong with ids and content-hash versions", function()
    local ids = prompt.list()
    for _, id in ipairs({ "optimize", "fix_compile", "fix_wrong" }) do
      local tpl = assert(prompt.load(id))
      assert.are.equal(id, tpl.id)
      assert.are.equal(prompt.version_of(tpl.text), tpl.version)
      assert.matches("^%x+$", tpl.version)
      assert.are.equal(16, #tpl.version)
      local found = false
      for _, x in ipairs(ids) do if x == id then found = true end end
      assert.is_true(found, id .. " not listed")
    end
    assert.are_not.equal(prompt.load("optimize").version, prompt.load("fix_wrong").version)
  end)

  it("a changed template has another version", function()
    local dir = os.tmpname()
    os.remove(dir)
    util.mkdir_p(dir)
    util.write_file(dir .. "/mine.txt", "Hello {{task.name}}")
    local v1 = assert(prompt.load("mine", { prompts_dir = dir })).version
    util.write_file(dir .. "/mine.txt", "Hello {{task.name}}!")
    local v2 = assert(prompt.load("mine", { prompts_dir = dir })).version
    assert.are_not.equal(v1, v2)
    os.execute("rm -rf " .. util.shell_quote(dir))
  end)

  it("refuses unknown ids and odd names", function()
    local t, err = prompt.load("no_such_prompt")
    assert.is_nil(t)
    assert.matches("no prompt template 'no_such_prompt'", err)
    t, err = prompt.load("../etc/passwd")
    assert.is_nil(t)
    assert.matches("bad prompt id", err)
  end)

  it("every shipped template renders with a full context and with a bare one", function()
    local parent = { source = task.source, result = { verdict = "wrong", reason = "relative error 0.3", time_ms = 275.8,
      ci_ms = { 275.1, 276.3 }, tflops = 0.5, frac_peak = 0.01, bound = "compute",
      compile_log = "kernel.cu(3): error: identifier \"x\" is undefined",
      resources = { gemm = { registers = 40, static_smem = 8192, spill_stores = 0 } } } }
    local full = prompt.context({ task = task, gpu = GPU, parent = parent, best = parent, baseline = { time_ms = 275.8 },
      attempts = { { label = "tile 64", result = { verdict = "ok", time_ms = 12.5 } }, { result = { verdict = "compile_error", reason = "does not compile" } } } })
    local bare = prompt.context({})
    for _, id in ipairs({ "optimize", "fix_compile", "fix_wrong" }) do
      local tpl = assert(prompt.load(id))
      local m = assert(prompt.messages(tpl, full))
      assert.are.equal("system", m[1].role)
      assert.are.equal("user", m[2].role)
      assert.is_nil(m[2].content:find("{{", 1, true), id .. " left a placeholder")
      assert.truthy(m[2].content:find(task.source, 1, true), id .. " lacks the parent source")
      assert(prompt.messages(tpl, bare))
    end
    local m = assert(prompt.messages(prompt.load("optimize"), full))[2].content
    assert.truthy(m:find('extern "C" __global__ void gemm(int M, int N, int K, const float* A, const float* B, float* C)', 1, true))
    assert.truthy(m:find("NVIDIA H200 (sm_90), 132 SMs, L2 60 MiB", 1, true))
    assert.truthy(m:find("M=4096, N=4096, K=4096", 1, true))
    assert.truthy(m:find("#1 tile 64: ok, 12.5 ms", 1, true))
    assert.truthy(m:find("40 registers/thread", 1, true))
    assert.truthy(m:find("Best so far: wrong", 1, true))
    assert.truthy(m:find("TFLOP/s", 1, true))
    -- no profile yet: no profile section
    assert.is_nil(m:find("Profile of the current kernel", 1, true))
    -- a profiled parent: the roofline line, counters and hints reach the model
    parent.result.profile = require("kloop.profile").summarize({ time_ms = 275.8,
      cost = { flops = 2 * 4096 ^ 3, bytes = 4 * 3 * 4096 ^ 2 }, peaks = { flops = 52e12, bytes = 4.18e12 },
      peaks_source = "measured", metrics = { ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 33,
        ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 2 } })
    local pm = assert(prompt.messages(prompt.load("optimize"), prompt.context({ task = task, gpu = GPU, parent = parent })))[2].content
    assert.truthy(pm:find("Profile of the current kernel", 1, true))
    assert.truthy(pm:find("- compute-bound by the cost model (683 FLOP/B", 1, true))
    assert.truthy(pm:find("16.5 sectors per request", 1, true))
    local fc = assert(prompt.messages(prompt.load("fix_compile"), full))[2].content
    assert.truthy(fc:find('identifier "x" is undefined', 1, true))
  end)

  it("fills placeholders, sections and inverted sections", function()
    local ctx = { a = { b = "B", n = 3, x = 0.125, no = false, empty = "" }, list = { "p", "q" } }
    assert.are.equal("B 3 0.125 p\nq", prompt.render("{{a.b}} {{ a.n }} {{a.x}} {{list}}", ctx))
    assert.are.equal("[yes]", prompt.render("[{{#a.b}}yes{{/a.b}}{{#a.no}}no{{/a.no}}{{#a.empty}}e{{/a.empty}}]", ctx))
    assert.are.equal("[none]", prompt.render("[{{^a.no}}none{{/a.no}}]", ctx))
    assert.are.equal("(none)", prompt.render("{{a.no}}", ctx))
    assert.are.equal("x", prompt.render("{{! a comment }}x", ctx))
  end)

  it("reports every unknown placeholder as an error", function()
    local out, err = prompt.render("{{task.nmae}} and {{gpu.nope}} and {{#zzz}}x{{/zzz}} {{task.nmae}}", prompt.context({}))
    assert.is_nil(out)
    assert.matches("{{task.nmae}}", err, 1, true)
    assert.matches("{{gpu.nope}}", err, 1, true)
    assert.matches("{{zzz}}", err, 1, true)
    local _, c = err:gsub("task.nmae", "")
    assert.are.equal(1, c)
    local m, merr = prompt.messages({ id = "bad", text = "=== user ===\n{{parent.sauce}}" }, prompt.context({}))
    assert.is_nil(m)
    assert.matches("^bad: unknown placeholder", merr)
  end)

  it("shows a runtime verdict as kloop's numbers about the output, never the worker's words", function()
    local SECRET = "sk-planted-SECRET"
    -- what a host candidate that read a secret could put into every string of the reply
    local function forged(verdict, evidence, extra)
      local r = { verdict = verdict, reason = "boom " .. SECRET, output_tail = "printed " .. SECRET, evidence = evidence,
        bound = SECRET, resources = { [SECRET] = { registers = SECRET, static_smem = 1024 }, gemm = { registers = 32 } } }
      for k, v in pairs(extra or {}) do r[k] = v end
      return { source = task.source, result = r }
    end
    local cases = {
      forged("wrong", { case = "check1", set = 2, arg = "C", size = { M = 67, N = 45, K = 33, [SECRET] = 1 },
        rel_err = 0.25, bad = 12, index = 7, out = 1.5, ref = 2.25 }),
      forged("wrong", { case = SECRET, set = SECRET, arg = SECRET, phase = SECRET, rel_err = SECRET, index = SECRET }),
      forged("nan", { case = "bench", set = 1, arg = "C", count = 3, index = 0 }),
      forged("unwritten", { case = "check2", arg = "C", count = 5, index = 9 }),
      forged("inputs_modified", { case = "check1", arg = "A", index = 4 }),
      forged("nondeterministic", { case = "bench", arg = "C", index = 2 }),
      forged("crashed", {}, { reason = "worker exited on signal 11 " .. SECRET }),
      forged("crashed", {}, { reason = "signal 31 " .. SECRET }),
      forged("timeout", {}, { reason = "no answer within 5 s: " .. SECRET }),
      forged("launch_error", { case = "bench" }, { reason = "CUDA_ERROR_ILLEGAL_ADDRESS " .. SECRET }),
      forged("too_fast", {}, { time_ms = 0.001, floor_ms = 0.5 }),
      forged(SECRET, {}),
      forged("ok", {}, { time_ms = 1.5, reps = 40 }),
    }
    local texts = {}
    for i, parent in ipairs(cases) do
      local ctx = prompt.context({ task = task, gpu = GPU, parent = parent, best = parent,
        attempts = { { label = "try", result = parent.result } } })
      for _, id in ipairs({ "optimize", "fix_compile", "fix_wrong" }) do
        for _, m in ipairs(assert(prompt.messages(assert(prompt.load(id)), ctx))) do
          assert.is_nil(m.content:find("SECRET", 1, true), string.format("case %d, %s: %s", i, id, m.content))
        end
      end
      texts[i] = ctx.parent.reason
    end
    -- the evidence itself is there, as numbers and the task's own names
    assert.are.equal("C (check1: M=67, N=45, K=33; input set 2): relative error 0.25 (limit 1e-05), 12 elements off; "
      .. "worst at element 7: 1.5 vs 2.25 (reference)", texts[1])
    assert.are.equal("an output: ", texts[2]:sub(1, 11))
    assert.matches("3 NaN/Inf elements in C %(bench", texts[3])
    assert.matches("5 elements of C %(check2%) were never written %(first at element 9%)", texts[4])
    assert.matches("input was changed by the kernel: A %(check1%)", texts[5])
    assert.matches("signal 11, SIGSEGV", texts[7])
    assert.matches("forbidden system call", texts[8])
    assert.matches("within 5 s", texts[9])
    assert.matches("on bench: CUDA_ERROR_ILLEGAL_ADDRESS$", texts[10])
    assert.matches("below the physical floor 0.5 ms", texts[11])
    local ctx = prompt.context({ task = task, parent = cases[12] })
    assert.are.equal("invalid", ctx.parent.verdict)
    ctx = prompt.context({ task = task, parent = cases[1] })
    assert.is_false(ctx.parent.bound)
    assert.matches("- gemm: 32 registers/thread", ctx.parent.resources)
    assert.matches("- kernel 2: 1 KiB static shared", ctx.parent.resources)
  end)

  it("keeps compile logs and compile reasons bounded, without absolute paths", function()
    local lines = {}
    for i = 1, 30 do lines[i] = string.format("/home/someone/.secret/dir/kernel.cu(%d): error: %s", i, string.rep("x", 300)) end
    local ctx = prompt.context({ task = task, parent = { source = "x", result = { verdict = "compile_error",
      reason = "does not compile", compile_log = table.concat(lines, "\n") } } })
    assert.is_true(#ctx.parent.compile_log <= prompt.LOG_MAX_BYTES + 40)
    assert.matches("more bytes%)$", ctx.parent.compile_log)
    assert.is_nil(ctx.parent.compile_log:find("/home/someone", 1, true))
    assert.are.equal("does not compile", ctx.parent.reason)
    ctx = prompt.context({ parent = { source = "x", result = { verdict = "rejected",
      reason = "#include </etc/hostname>: only the task's own headers" } } })
    assert.is_nil(ctx.parent.reason:find("/etc/", 1, true))
  end)

  it("keeps long compile logs to the errors", function()
    local lines = {}
    for i = 1, 200 do lines[i] = "note line " .. i end
    lines[150] = "kernel.cu(150): error: expected a \";\""
    local ctx = prompt.context({ parent = { source = "x", result = { verdict = "compile_error", compile_log = table.concat(lines, "\n") } } })
    assert.truthy(ctx.parent.compile_log:find("expected a", 1, true))
    assert.truthy(ctx.parent.compile_log:find("more lines", 1, true))
    assert.is_true(#ctx.parent.compile_log < 400)
  end)
end)
