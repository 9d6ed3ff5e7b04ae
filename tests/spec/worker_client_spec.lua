-- tests/spec/worker_client_spec.lua: the evaluator's worker supervision: a start whose
-- ceilings measurement keeps killing the worker ends (without the ceilings), and an
-- evaluator dropped without close() does not leave its worker behind.
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local sys = require("kloop.core.sys")

describe("kloop.eval worker start", function()
  -- A CUDA evaluator whose worker is scripted: hello and setup succeed, the "peaks"
  -- request kills the worker every time (as a chip that faults on the FMA kernel would).
  local function crashing_peaks()
    local ev = eval.new(assert(taskmod.load("kernels/gemm.lua")), { backend = "cuda" })
    -- a GPU no cache file names: the ceilings are measured, not read
    local uuid = "GPU-spec-" .. sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    ev.spawns, ev.ops = 0, {}
    ev.spawn = function(self)
      self.spawns = self.spawns + 1
      -- the bug recursed without end; stop the spec long before a stack overflow
      if self.spawns > 8 then error("start recursed: " .. self.spawns .. " workers started", 0) end
      self.proc = true
      return true
    end
    ev.kill = function(self) self.proc, self.ready = nil, false end
    ev.request = function(self, req)
      self.ops[#self.ops + 1] = req.op
      if req.op == "hello" then
        return { ok = true, gpu = { arch = "sm_90", name = "sim H200", uuid = uuid, sm_count = 132,
          clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 } }
      elseif req.op == "setup" then
        return { ok = true }
      elseif req.op == "peaks" then
        self:kill()
        return nil, "crashed", "the worker died (signal 11)"
      end
      error("unexpected request " .. tostring(req.op))
    end
    return ev
  end

  it("restarts once when measuring the ceilings kills the worker, and runs without them", function()
    local ev = crashing_peaks()
    local ok, err = ev:start()
    assert.is_true(ok, err)
    assert.are.equal(2, ev.spawns)
    assert.is_false(ev.measured)
    assert.is_true(ev.ready)
    assert.are.same({ "hello", "setup", "peaks", "hello", "setup" }, ev.ops)
    -- a later restart (a candidate crashed the worker) does not pay for them again
    ev:kill()
    assert.is_true((ev:start()))
    assert.are.equal(3, ev.spawns)
    assert.are.equal("setup", ev.ops[#ev.ops])
    -- the rates still come out, against the datasheet only
    local r = ev:derive({ verdict = "ok", time_ms = 10 })
    assert.is_number(r.frac_peak)
    assert.is_nil(r.frac_measured)
  end)
end)

describe("kloop.eval precompile before the worker is up", function()
  -- the driver compiles the first batches the strategy foresees before the baseline
  -- runs; with no worker yet, they must be queued right after the hello (the arch is
  -- known), so they compile beside the reference and during the task's setup
  it("queues the candidates' compiles before the setup request", function()
    local compile = require("kloop.eval.compile")
    local ev = eval.new(assert(taskmod.load("kernels/gemm.lua")), { backend = "cuda", measure_peaks = false })
    -- defines no binary in any cache has: a queued job is the only way to be ready early
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    local cands = {}
    for k = 1, 3 do cands[k] = { defines = { KLOOP_SPEC_NONCE = nonce .. k } } end
    local at_setup
    ev.spawn = function(self) self.proc = true return true end
    ev.kill = function(self) self.proc, self.ready = nil, false end
    ev.request = function(self, req)
      if req.op == "hello" then
        return { ok = true, gpu = { arch = "sm_90", name = "sim H200", uuid = "GPU-spec-precompile", sm_count = 132,
          clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 } }
      elseif req.op == "setup" then
        at_setup = {}
        for k, c in ipairs(cands) do
          local job = assert(self:compile_jobs(c)[1])
          at_setup[k] = compile.background.by_key[job.key] ~= nil or compile.ready(job)
        end
        return { ok = true }
      end
      error("unexpected request " .. tostring(req.op))
    end
    ev:precompile(cands)
    assert.is_true(ev.ready)
    assert.are.same({ true, true, true }, at_setup)
    compile.cancel_background()
  end)
end)

describe("kloop.eval compiles before the worker's hello", function()
  local compile = require("kloop.eval.compile")
  local run = compile.run
  after_each(function()
    compile.run = run
    compile.cancel_background()
  end)
  local GPU = { arch = "sm_90", name = "sim H200", uuid = "GPU-spec-early", sm_count = 132,
    clock_khz = 1980000, mem_clock_khz = 2619000, mem_bus_width = 6144 }

  -- a scripted worker; `seen` records, at the spawn, the compiles already under way
  -- (queued, running or done) and, at the setup, the binaries it was given
  local function scripted(hint, hello_arch)
    -- a reference no cache holds (a fresh comment in its text)
    local task = assert(taskmod.load("kernels/gemm.lua"))
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    task.reference.source = "// spec " .. nonce .. "\n" .. task.reference.source
    local ev = eval.new(task, { backend = "cuda", measure_peaks = false, gpu_hint = hint })
    -- (before: every compile asked for before the spawn, by file name and arch, cached or not)
    local seen = { at_spawn = {}, before = {} }
    compile.run = function(jobs, o)
      for _, j in ipairs(jobs) do
        if not seen.spawned then seen.before[j.name .. " " .. j.options[1]] = true end
      end
      return run(jobs, o)
    end
    ev.spawn = function(self)
      seen.spawned = true
      for k in pairs(compile.background.by_key) do seen.at_spawn[k] = true end
      self.proc = true
      return true
    end
    ev.kill = function(self) self.proc, self.ready = nil, false end
    ev.request = function(_, req)
      if req.op == "hello" then
        local g = {}
        for k, v in pairs(GPU) do g[k] = v end
        g.arch = hello_arch
        return { ok = true, gpu = g }
      elseif req.op == "setup" then
        seen.ref_cubin = req.ref_cubin
        seen.check_cubin = req.check_cubin
        return { ok = true }
      end
      error("unexpected request " .. tostring(req.op))
    end
    return ev, seen
  end
  local function arch_of(job)
    for _, o in ipairs(job.options) do
      local a = o:match("^%-%-gpu%-architecture=(.*)")
      if a then return a end
    end
  end

  it("starts the reference's and kloop's own compiles before spawning the worker when the probe named the arch", function()
    local ev, seen = scripted({ arch = "sm_90" }, "sm_90")
    assert.is_true((ev:start()))
    assert.is_true(seen.at_spawn[ev.ref_job.key] == true, "the reference was not compiling when the worker was spawned")
    assert.is_true(seen.before["kloop_check_regions.cu --gpu-architecture=sm_90"],
      "kloop's state-check kernel was not asked for before the worker was spawned")
    assert.is_true(ev.ref_job.ok, ev.ref_job.log)
    assert.are.equal(ev.ref_job.cubin_path, seen.ref_cubin)
  end)

  it("without a hint, compiles after the hello, as before", function()
    local ev, seen = scripted(nil, "sm_90")
    assert.is_true((ev:start()))
    assert.is_nil(seen.at_spawn[ev.ref_job.key])
    assert.is_nil(next(seen.before))
    assert.is_true(ev.ref_job.ok, ev.ref_job.log)
    assert.are.equal(ev.ref_job.cubin_path, seen.ref_cubin)
  end)

  -- the probe saw one GPU and the worker another (a device option, a remote rank)
  it("compiles again for the arch the hello names when it is not the hint's", function()
    local ev, seen = scripted({ arch = "sm_80" }, "sm_90")
    assert.is_true((ev:start()))
    assert.is_true(seen.before["gemm_ref.cu --gpu-architecture=sm_80"], "nothing was started for the hint")
    assert.are.equal("sm_90", ev.arch)
    assert.are.equal("sm_90", arch_of(ev.ref_job))
    assert.is_nil(seen.at_spawn[ev.ref_job.key])
    assert.are.equal(ev.ref_job.cubin_path, seen.ref_cubin)
    local own = compile.compile(eval.check_source, { arch = "sm_90", name = "kloop_check_regions.cu" })
    assert.is_true(own.ok)
    assert.are.equal(own.cubin_path, seen.check_cubin)
  end)

  it("leaves the evaluator's arch unset when the worker does not start", function()
    local ev = scripted({ arch = "sm_80" }, "sm_90")
    ev.spawn = function() return nil, "no such program" end
    local ok, err = ev:start()
    assert.is_nil(ok)
    assert.matches("no such program", err)
    assert.is_nil(ev.arch)
  end)

  it("gives the probe's arch to device 0's evaluator only, not to another device's", function()
    local workers = require("kloop.search.workers")
    local ctx = { opts = { remote_workers = "", gpus = "1", workers = 1, cascade = "off" }, task = { backend = "cuda" },
      gpu = { device_count = 2 }, ev = { opts = { gpu_hint = GPU } } }
    assert.is_true((workers.build(ctx, eval)))
    assert.are.equal(1, ctx.ev.opts.device)
    assert.is_nil(ctx.ev.opts.gpu_hint)
    ctx.opts.gpus, ctx.ev.opts = "0", { gpu_hint = GPU }
    assert.is_true((workers.build(ctx, eval)))
    assert.are.equal(GPU, ctx.ev.opts.gpu_hint)
  end)
end)

describe("kloop.eval worker requests", function()
  -- a request waits on the worker (an evaluation of seconds): the background compilers
  -- must be read meanwhile, a finished one's slot given to the next queued one, or the
  -- queue stands still for the whole evaluation
  it("reads the background compilers and starts the queued ones while it waits for the reply", function()
    local compile = require("kloop.eval.compile")
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    local jobs = {}
    for k = 1, 3 do
      jobs[k] = assert(compile.prepare(string.format('extern "C" __global__ void k%d(float *x) { x[0] = %d; }', k, k),
        { arch = "sm_90", name = "pump" .. k .. ".cu", defines = { KLOOP_SPEC_NONCE = nonce } }))
    end
    local parallel = compile.background.parallel
    compile.run(jobs, { background = true, parallel = 1 })
    finally(function() compile.background.parallel = parallel end)
    assert.are.equal(1, #compile.background.running)
    local function all_done()
      for _, j in ipairs(jobs) do if not j.done then return false end end
      return true
    end
    -- the worker answers once the compiles are done, or after LIMIT seconds
    local LIMIT, t0 = 20, sys.now()
    local function answered() return all_done() or sys.now() - t0 > LIMIT end
    local ev = eval.new(assert(taskmod.load("kernels/gemm.lua")), { backend = "cuda" })
    ev.proc = {
      send = function() return true end,
      ready = function(_, t)
        local t1 = sys.now() + t
        while not answered() and sys.now() < t1 do end
        return answered()
      end,
      recv = function()
        while not answered() do end
        return '{"ok":true}'
      end,
    }
    assert.is_true(ev:request({ op = "evaluate" }, 60).ok)
    ev.proc = nil
    assert.is_true(all_done(), "the queued compiles did not run while the request waited")
    assert.is_true(sys.now() - t0 < LIMIT)
    for _, j in ipairs(jobs) do assert.is_true(j.ok, j.log) end
    compile.cancel_background()
  end)

  -- a Ctrl-C served while the request waits (the Lua loop that reads the compilers) must
  -- not leave the worker with a reply nobody reads: the next request would take it as its own
  it("stops the worker when an interrupt ends the wait, so no later request reads a stale reply", function()
    local compile = require("kloop.eval.compile")
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    compile.run({ assert(compile.prepare('extern "C" __global__ void k(float *x) { x[0] = 1; }',
      { arch = "sm_90", name = "stale.cu", defines = { KLOOP_SPEC_NONCE = nonce } })) }, { background = true })
    local ev = eval.new(assert(taskmod.load("kernels/gemm.lua")), { backend = "cuda" })
    local killed = false
    ev.proc = {
      send = function() return true end,
      ready = function() error(sys.INTERRUPTED, 0) end,
      recv = function() return '{"ok":true,"stale":true}' end,
      kill = function() killed = true end,
      tail = function() return "" end,
    }
    local ok, err = pcall(ev.request, ev, { op = "evaluate" }, 60)
    assert.is_false(ok)
    assert.is_true(sys.is_interrupt(err))
    assert.is_true(killed, "the worker was left running with an unread reply")
    assert.is_nil(ev.proc)
    compile.cancel_background()
  end)

  -- the driver's think hook (strategy.think) runs while the worker computes: after the
  -- request is sent and before its reply is read, once, never in a start's hello/setup
  it("runs the one-shot hook between sending a request and reading its reply", function()
    local ev = eval.new(assert(taskmod.load("kernels/gemm.lua")), { backend = "cuda" })
    local log = {}
    ev.proc = {
      send = function(_, text) log[#log + 1] = "send " .. text:match('"op":"(%w+)"') return true end,
      recv = function() log[#log + 1] = "recv" return '{"ok":true}' end,
    }
    ev.on_sent = function() log[#log + 1] = "hook" end
    assert.is_true(ev:request({ op = "hello" }, 5).ok)
    assert.is_true(ev:request({ op = "setup" }, 5).ok)
    assert.is_true(ev:request({ op = "evaluate" }, 5).ok)
    assert.is_true(ev:request({ op = "evaluate" }, 5).ok)
    assert.are.same({ "send hello", "recv", "send setup", "recv", "send evaluate", "hook", "recv", "send evaluate", "recv" }, log)
    assert.is_nil(ev.on_sent)
    -- a hook that sends a request of its own is refused (it would read the other's reply)
    ev.on_sent = function() ev:request({ op = "evaluate" }, 5) end
    local ok, err = pcall(ev.request, ev, { op = "evaluate" }, 5)
    assert.is_false(ok)
    assert.matches("inside a think hook", err)
    assert.is_nil(ev.in_hook)
    ev.proc = nil
  end)
end)

-- W:prespawn (the driver, before its GPU probe): the worker is spawned and its hello
-- sent at once; the start reads that hello and spawns no second worker
describe("kloop.eval a worker spawned ahead", function()
  it("is the worker the start uses, its hello read once", function()
    local ev = eval.new(assert(taskmod.load("examples/cpu/sgemm.c")))
    local spawns = 0
    local spawn = ev.spawn
    ev.spawn = function(self) spawns = spawns + 1 return spawn(self) end
    assert.is_true((ev:prespawn()))
    assert.are.equal(1, spawns)
    local pid = ev.proc.pid
    assert.is_true((ev:start()))
    assert.are.equal(1, spawns, "a second worker was spawned")
    assert.are.equal(pid, ev.proc.pid)
    assert.is_table(ev.gpu, "the hello's facts")
    -- and it evaluates
    local r = ev:evaluate(nil, { timing = { min_reps = 2, max_reps = 2, budget = 0 } })
    assert.are.equal("ok", r.verdict, tostring(r.reason))
    ev:close()
  end)

  -- the arch NVML names (gpu.arch_hint): kloop's own kernels and the reference compile
  -- from the prespawn on, once per arch; a hello naming another arch compiles them again
  it("starts kloop's own kernels and the reference compiling from an arch hint, once per arch", function()
    local compile = require("kloop.eval.compile")
    local ev = eval.new(assert(taskmod.load("kernels/saxpy.lua")))
    local runs, order = {}, {}
    local run = compile.run
    compile.run = function(jobs, o)
      local names = {}
      for _, j in ipairs(jobs) do names[#names + 1] = tostring(j.name) end
      runs[#runs + 1] = { names = names, urgent = o and o.urgent }
      order[#order + 1] = "compile"
    end
    ev.spawn = function() order[#order + 1] = "spawn" return nil, "no worker in this test" end
    local ok, perr = pcall(ev.prespawn, ev, "sm_90")
    compile.run = run
    assert.is_true(ok, tostring(perr))
    assert.are.same({ "compile", "compile", "spawn" }, order, "the compiles start before the spawn")
    assert.are.equal("sm_90", ev.compiles_for)
    assert.are.same({ "kloop_l2_flush.cu", "kloop_check_regions.cu", "kloop_compare.cu", "fma_peak.cu" }, runs[1].names,
      "kloop's three kernels and the ceilings' FMA kernel")
    assert.is_true(runs[2].urgent, "the reference first")
    -- the same arch again (the probe's): nothing more; another: all again
    compile.run = function() order[#order + 1] = "compile" end
    ev:begin_compiles("sm_90")
    assert.are.equal(3, #order)
    ev.precompile_at_start = { { source = ev.task.source } }
    ev:begin_compiles("sm_90")
    assert.are.equal(4, #order, "precompile's candidates queue once")
    ev:begin_compiles("sm_90")
    assert.are.equal(4, #order)
    ev:begin_compiles("sm_80")
    compile.run = run
    assert.are.equal(7, #order, "another arch: own kernels, reference and the candidates again")
    assert.is_nil(ev.arch, "the worker's arch is its hello's")
    -- no ceilings to measure: no FMA kernel compiled for them
    local ev2 = eval.new(assert(taskmod.load("kernels/saxpy.lua")), { measure_peaks = false })
    runs = {}
    compile.run = function(jobs)
      local names = {}
      for _, j in ipairs(jobs) do names[#names + 1] = tostring(j.name) end
      runs[#runs + 1] = names
    end
    ev2:begin_compiles("sm_90")
    compile.run = run
    assert.are.same({ "kloop_l2_flush.cu", "kloop_check_regions.cu", "kloop_compare.cu" }, runs[1])
  end)

  -- a search's first evaluation is the task's own kernel at its defaults: it compiles
  -- from the first arch known on (it waited for its compile after the worker's start)
  it("compiles the baseline with kloop's own kernels where asked, the very binary its evaluation loads", function()
    local compile = require("kloop.eval.compile")
    local task = assert(taskmod.load("kernels/gemm_tiled.lua"))
    local function queued(opts)
      local ev = eval.new(task, opts)
      local runs = {}
      local run = compile.run
      compile.run = function(jobs, o) for _, j in ipairs(jobs) do runs[#runs + 1] = { key = j.key, urgent = o and o.urgent } end end
      local ok, err = pcall(ev.begin_compiles, ev, "sm_90")
      compile.run = run
      assert(ok, err)
      -- (the key of the baseline's evaluation: the driver's opts for it, defines and name nil)
      ev.arch = "sm_90"
      local _, copts = ev:compiler({ timing = {} }, task.source)
      local key = compile.prepare(task.source, copts).key
      for _, r in ipairs(runs) do if r.key == key then return r end end
      return nil
    end
    local r = queued({ precompile_baseline = true })
    assert.is_table(r, "the baseline's binary was not queued")
    assert.is_true(r.urgent)
    assert.is_nil(queued({}), "queued without being asked")
    assert.is_nil(queued({ precompile_baseline = true, compile_background = false }))
    -- a pool's other workers never run the baseline: none of them is asked to compile it
    local host = assert(taskmod.load("examples/cpu/sgemm.c"))
    local ctx = { task = host, ev = eval.new(host, { precompile_baseline = true }),
      opts = { workers = 3, gpus = "", remote_workers = "", cascade = "off" } }
    assert.is_true((require("kloop.search.workers").build(ctx, eval)))
    assert.are.equal(3, #ctx.pool.evs)
    assert.is_true(ctx.pool.evs[1].opts.precompile_baseline)
    assert.is_nil(ctx.pool.evs[2].opts.precompile_baseline)
    assert.is_nil(ctx.pool.evs[3].opts.precompile_baseline)
    for _, e in ipairs(ctx.pool.evs) do e:close() end
  end)

  it("is stopped by close when the run ends before its start", function()
    local ev = eval.new(assert(taskmod.load("examples/cpu/sgemm.c")))
    assert.is_true((ev:prespawn()))
    local pid = ev.proc.pid
    ev:close()
    assert.is_nil(ev.proc)
    assert.is_nil(ev.hello_sent)
    assert.is_false(os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0, "the worker outlived close")
  end)
end)

describe("kloop.eval worker ownership", function()
  it("kills and reaps the worker of an evaluator dropped without close()", function()
    local ev = eval.new(assert(taskmod.load("examples/cpu/sgemm.c")))
    assert.is_true((ev:spawn()))
    local pid = ev.proc.pid
    assert.is_true(pid > 0)
    assert.is_true(os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0, "the worker runs")
    ev = nil -- luacheck: ignore (dropped on the floor, as a REPL user would)
    collectgarbage()
    collectgarbage()
    -- killed and reaped: not even a zombie is left under this pid
    assert.is_false(os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0, "worker " .. pid .. " outlived its evaluator")
  end)
end)
