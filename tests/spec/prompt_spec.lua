-- tests/spec/prompt_spec.lua: prompt templates: ids, versions, the context schema, rendering and its errors.
local prompt = require("kloop.llm.prompt")
local taskmod = require("kloop.eval.task")
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
      -- a pair with its host (C) variant: one version for both texts
      assert.truthy(tpl.host, id .. " has no host variant")
      assert.are.equal(id .. "_host", tpl.host.id)
      assert.are.equal(prompt.version_of(tpl.text .. "\0" .. tpl.host.text), tpl.version)
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
      attempts = { { label = "tile 64", result = { verdict = "ok", time_ms = 12.5 } },
        { result = { verdict = "compile_error", reason = "does not compile" } } } })
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
    assert.truthy(m:find("GPU: NVIDIA H200 (sm_90), 132 SMs.\nL2 cache: 60 MiB.", 1, true))
    assert.truthy(m:find("M=4096, N=4096, K=4096", 1, true))
    assert.truthy(m:find("#1 tile 64: ok, 12.5 ms", 1, true))
    assert.truthy(m:find("40 registers/thread", 1, true))
    assert.truthy(m:find("Best so far: wrong", 1, true))
    assert.truthy(m:find("TFLOP/s", 1, true))
    -- no profile yet: no profile section
    assert.is_nil(m:find("Profile of the current kernel", 1, true))
    -- a profiled parent: the roofline line, counters and hints reach the model
    parent.result.profile = require("kloop.eval.profile").summarize({ time_ms = 275.8,
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
    -- an absent value never shows: its line is left out, a standalone section tag takes its line
    assert.are.equal("", prompt.render("{{a.no}}", ctx))
    assert.are.equal("x\nz", prompt.render("x\nvalue: {{a.no}}\nz", ctx))
    assert.are.equal("x\nB\nz", prompt.render("x\n{{#a.b}}\n{{a.b}}\n{{/a.b}}\n{{#a.no}}\nno\n{{/a.no}}\nz", ctx))
    assert.are.equal("a (B).", prompt.render("a{{#a.b}} ({{a.b}}){{/a.b}}{{#a.no}} ({{a.no}}){{/a.no}}.", ctx))
    assert.are.equal("a\n\nb", prompt.render("a\n\n{{a.no}}\n\nb", ctx))
    -- a name under a section without data is absent, not unknown; hidden typos are still found
    assert.are.equal("", prompt.render("{{#a.no}}{{a.no.deep}}{{/a.no}}", ctx))
    assert.is_nil((prompt.render("{{#a.no}}{{a.tpyo}}{{/a.no}}", ctx)))
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
    local ctx = prompt.context({ parent = { source = "x",
      result = { verdict = "compile_error", compile_log = table.concat(lines, "\n") } } })
    assert.truthy(ctx.parent.compile_log:find("expected a", 1, true))
    assert.truthy(ctx.parent.compile_log:find("more lines", 1, true))
    assert.is_true(#ctx.parent.compile_log < 400)
  end)

  -- What a model must never see: a gap where a fact was missing.
  local function lint(text, where)
    -- outside code blocks: the kernel's own source may hold anything
    local prose = text:gsub("\n```[^\n]*\n.-\n```", "\n")
    assert.is_nil(prose:find("(none)", 1, true), where .. ": (none) in\n" .. text)
    assert.is_nil(prose:find("[^%w_]%(%s*%)"), where .. ": an empty () in\n" .. text)
    for _, w in ipairs({ "nil", "false", "true" }) do
      assert.is_nil(prose:find("%f[%w]" .. w .. "%f[^%w]"), where .. ": '" .. w .. "' in\n" .. text)
    end
    for l in (prose .. "\n"):gmatch("([^\n]*)\n") do
      assert.is_nil(l:find(":[ \t]+$"), where .. ": empty ': ' line '" .. l .. "'")
      assert.is_nil(l:find(",[ \t]*[,.)]") or l:find("%([ \t]*[,.]"), where .. ": a gap in '" .. l .. "'")
    end
    -- a header line ("Arguments:") has its body under it: on the next line, or after one
    -- blank line, a code block or an indented line
    local lines = {}
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    for i, l in ipairs(lines) do
      if l:find(":$") and not l:find("^%s") and not l:find("^//") then
        local nxt, after = lines[i + 1] or "", lines[i + 2] or ""
        assert.truthy(nxt:find("%S") or after:find("^```") or after:find("^    %S"),
          where .. ": '" .. l .. "' has nothing under it")
      end
    end
  end

  local function test_cpu() return prompt.cpu_facts({ cpuinfo = table.concat({
    "processor\t: 0", "model name\t: Test CPU 9000", "physical id\t: 0", "core id\t: 0",
    "flags\t\t: fpu sse2 sse4_2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512vl", "",
    "processor\t: 1", "model name\t: Test CPU 9000", "physical id\t: 0", "core id\t: 0", "",
    "processor\t: 2", "model name\t: Test CPU 9000", "physical id\t: 0", "core id\t: 1", "" }, "\n"),
    cache_dir = "/nonexistent" }) end

  local function variants(t)
    local base = { source = t.source, proposer = "baseline" }
    local timed = { source = t.source, result = { verdict = "ok", time_ms = 12.5, reps = 20 } }
    local broken = { source = t.source .. "\n#error nope", result = { verdict = "compile_error", reason = "does not compile",
      compile_log = "candidate.c(9): error: #error nope" } }
    local wrong = { source = t.source, result = { verdict = "wrong", evidence = { case = "check1", arg = t.args[#t.args].name,
      rel_err = 0.5 } } }
    return {
      { "first request (baseline not timed)", { parent = base } },
      { "baseline timed", { parent = timed, baseline = timed, best = timed } },
      { "compile error", { parent = broken, baseline = timed, best = timed, attempts = { { result = broken.result } } } },
      { "wrong", { parent = wrong, baseline = timed } },
      { "bare", {} },
    }
  end

  it("renders no (none), no empty ': ' line and no gap, for a CUDA and a host task, with and without a baseline", function()
    local host = assert(taskmod.load("examples/cpu/sgemm.c"))
    local CPU = prompt.cpu_facts and test_cpu()
    for _, t in ipairs({ task, host }) do
      for _, gpu in ipairs({ GPU, false }) do
        for _, v in ipairs(variants(t)) do
          local raw = {}
          for k, x in pairs(v[2]) do raw[k] = x end
          if v[1] ~= "bare" then raw.task, raw.gpu, raw.cpu = t, gpu, CPU end
          for _, id in ipairs({ "optimize", "fix_compile", "fix_wrong" }) do
            local where = string.format("%s, %s, %s, gpu %s", t.backend, v[1], id, gpu and "known" or "unknown")
            local m = assert(prompt.messages(assert(prompt.load(id)), prompt.context(raw)))
            for _, msg in ipairs(m) do lint(msg.content, where) end
          end
        end
      end
    end
  end)

  it("says plainly that the baseline's time is not known yet, and gives it once it is", function()
    local tpl = assert(prompt.load("optimize"))
    local base = { source = task.source, proposer = "baseline" }
    local first = assert(prompt.messages(tpl, prompt.context({ task = task, gpu = GPU, parent = base })))[2].content
    assert.truthy(first:find("time is not known yet", 1, true))
    assert.truthy(first:find("Current kernel:\n", 1, true))
    local timed = { source = task.source, result = { verdict = "ok", time_ms = 275.8 } }
    local later = assert(prompt.messages(tpl, prompt.context({ task = task, gpu = GPU, parent = timed, baseline = timed })))[2].content
    assert.is_nil(later:find("not known", 1, true))
    assert.truthy(later:find("The original kernel takes 275.8 ms.", 1, true))
    assert.truthy(later:find("Current kernel (ok, 275.8 ms):", 1, true))
  end)

  it("gives a C task a C prompt: the compiler and its flags, the CPU, its ISA and caches, and CPU hints", function()
    local host = assert(taskmod.load("examples/cpu/sgemm.c"))
    local ch = require("kloop.eval.compile_host")
    local dir = os.tmpname()
    os.remove(dir)
    for i, c in ipairs({ { 1, "Data", "48K", "0" }, { 1, "Instruction", "32K", "0" }, { 2, "Unified", "2048K", "0-1" },
      { 3, "Unified", "32768K", "0-7" } }) do
      local d = dir .. "/index" .. (i - 1)
      util.mkdir_p(d)
      util.write_file(d .. "/level", c[1] .. "\n")
      util.write_file(d .. "/type", c[2] .. "\n")
      util.write_file(d .. "/size", c[3] .. "\n")
      util.write_file(d .. "/shared_cpu_list", c[4] .. "\n")
    end
    local cpu = prompt.cpu_facts({ cpuinfo = "processor : 0\nmodel name : Test CPU 9000\nflags : sse2 avx avx2 fma avx512f\n"
      .. "processor : 1\nflags : sse2\n", cache_dir = dir })
    os.execute("rm -rf " .. util.shell_quote(dir))
    assert.are.equal(512, cpu.vector_bits)
    local m = assert(prompt.messages(assert(prompt.load("optimize")), prompt.context({ task = host, cpu = cpu,
      parent = { source = host.source, result = { verdict = "ok", time_ms = 3.5 } } })))
    local sys, user = m[1].content, m[2].content
    assert.truthy(sys:find("CPU performance engineer", 1, true))
    assert.truthy(sys:find("```c code block", 1, true))
    assert.truthy(user:find("```c\n", 1, true))
    assert.truthy(user:find("void sgemm(int M, int N, int K, const float* A, const float* B, float* C)", 1, true))
    assert.truthy(user:find("CPU: Test CPU 9000.", 1, true))
    assert.truthy(user:find("Cores: 2 logical CPUs.", 1, true))
    assert.truthy(user:find("Instruction set extensions: AVX-512F, AVX2, FMA, AVX.", 1, true))
    assert.truthy(user:find("512-bit vectors: 16 floats or 8 doubles per register", 1, true))
    assert.truthy(user:find("Caches: L1d 48 KiB, L2 2 MiB (shared by 2 CPUs), L3 32 MiB (shared by 8 CPUs).", 1, true))
    assert.truthy(user:find("Compiler: " .. ch.cc_version(), 1, true))
    assert.truthy(user:find("Flags: " .. table.concat(ch.default_options, " ") .. " -shared -fPIC", 1, true))
    assert.truthy(user:find("Vectorization", 1, true))
    assert.truthy(user:find("Cache blocking", 1, true))
    for _, cuda in ipairs({ "CUDA", "GPU", "__global__", "NVRTC", "```cuda", "SMs", "__syncthreads" }) do
      assert.is_nil(sys:find(cuda, 1, true), cuda)
      assert.is_nil(user:find(cuda, 1, true), cuda)
    end
    -- the machine's own facts, when none are given
    local real = prompt.context({ task = host }).host
    assert.truthy(real.cpu and real.cores and real.compiler and real.flags)
    -- the fix templates too
    for _, id in ipairs({ "fix_compile", "fix_wrong" }) do
      local fm = assert(prompt.messages(assert(prompt.load(id)), prompt.context({ task = host, cpu = cpu,
        parent = { source = host.source, result = { verdict = id == "fix_compile" and "compile_error" or "wrong",
          compile_log = "candidate.c:3:1: error: unknown type name 'flot'" } } })))
      assert.truthy(fm[1].content:find("C engineer", 1, true), id)
      assert.is_nil(fm[2].content:find("CUDA", 1, true), id)
      assert.truthy(fm[2].content:find("```c\n", 1, true), id)
    end
  end)

  it("sends a compile error back with its log (fix_compile) in beam, greedy and bandit", function()
    local LOG = "candidate.cu(4): error: identifier \"tile_sz\" is undefined"
    for _, name in ipairs({ "beam", "greedy", "bandit" }) do
      local S = dofile("strategies/" .. name .. ".lua")
      local sent = {}
      local ep = { model = "m", name = "m" }
      local proposer = { name = "llm", eps = { ep } }
      -- renders what proposer_llm would send for this parent and template
      function proposer:children(ctx, parent, n, opts)
        local id = opts and opts.template or require("kloop.search.proposer_llm").template_for(parent)
        local m = assert(prompt.messages(assert(prompt.load(id)), prompt.context({ task = ctx.task, gpu = GPU,
          parent = parent, best = ctx.best, baseline = ctx.baseline, attempts = ctx.history })))
        sent[#sent + 1] = { id = id, text = m[2].content }
        local out = {}
        for i = 1, n do out[i] = { source = "// child " .. #sent .. "." .. i .. "\n" .. task.source, parent = parent } end
        return out
      end
      function proposer:fresh(ctx, n) return self:children(ctx, ctx.best or ctx.baseline, n) end
      local baseline = { source = task.source, proposer = "baseline", result = { verdict = "ok", time_ms = 275.8 } }
      local ctx = { task = task, proposer = proposer, baseline = baseline, history = { baseline },
        opts = { width = 2, expand = 1, batch = 1, window = 8, explore_c = 0.5 }, beam = {}, pulls = 0,
        arms = { { template = "optimize", endpoint = ep, name = "optimize@m", rewards = {}, pulls = 0 } } }
      local cands = S.propose(ctx)
      assert.is_true(#cands >= 1, name)
      local bad = cands[1]
      bad.result = { verdict = "compile_error", reason = "does not compile", compile_log = LOG }
      ctx.history[#ctx.history + 1] = bad
      S.on_result(ctx, bad, bad.result)
      local before = #sent
      S.propose(ctx)
      local fix
      for i = before + 1, #sent do if sent[i].id == "fix_compile" then fix = sent[i] end end
      assert.truthy(fix, name .. " sent no fix_compile request")
      assert.truthy(fix.text:find(LOG, 1, true), name .. ": the log did not reach the model")
      assert.truthy(fix.text:find(bad.source, 1, true), name .. ": the broken source did not reach the model")
      -- and the attempts line of every later request names the error, not only the verdict
      for i = before + 1, #sent do
        if sent[i].id == "optimize" then
          assert.truthy(sent[i].text:find('does not compile (candidate.cu(4): error: identifier "tile_sz" is undefined)', 1, true), name)
        end
      end
    end
  end)
end)

describe("prompt module loading", function()
  it("keeps template versions as stored in databases: FNV-1a 64 hex of the bytes", function()
    assert.are.equal("e16801510db89efd", prompt.version_of("abc"))
    assert.are.equal("c7ca7fb86fbb39b0", prompt.version_of("=== user ===\n{{task.name}}\n"))
  end)

  it("does not swallow a module that fails to load (the task's kernel parser)", function()
    local saved = package.loaded["kloop.eval.task"]
    package.loaded["kloop.eval.task"] = nil
    package.preload["kloop.eval.task"] = function() error("kloop.eval.task: planted load error", 0) end
    local ok, err = pcall(prompt.context, { task = { name = "t", entry = "f", source = "__global__ void f(int n) {}",
      args = {} }, gpu = false })
    package.preload["kloop.eval.task"] = nil
    package.loaded["kloop.eval.task"] = saved
    assert.is_false(ok)
    assert.matches("planted load error", tostring(err))
  end)
end)
