-- tests/spec/library_spec.lua: a task's library reference (kloop.eval.library): the
-- sidecar field's refusals, the driver hook skipping cleanly without a GPU or cuBLAS,
-- the store method's round trip, and the report's line.
local library = require("kloop.eval.library")
local store = require("kloop.store.db")
local build = require("kloop.report.build")
local html = require("kloop.report.html")

local root = debug.getinfo(1, "S").source:sub(2):match("^(.*)/tests/spec/") or "."
local make_store = dofile(root .. "/tests/report/fixture.lua")

local CUDA = { backend = "cuda", sizes = { bench = { M = 64, N = 32, K = 16 } } }
local GOOD = { call = "sgemm", m = "M", n = "N", k = "K" }

local function refusal(v, task)
  local ok, e = pcall(library.check_field, "t.lua", v, task or CUDA)
  assert.is_false(ok, "accepted")
  assert.are.equal("table", type(e))
  return e.message, e.field
end

describe("kloop.eval.library", function()
  it("normalizes a good field, with the call's default name", function()
    local v = library.check_field("t.lua", GOOD, CUDA)
    assert.are.same({ name = "cuBLAS sgemm", call = "sgemm", m = "M", n = "N", k = "K" }, v)
    local named = library.check_field("t.lua", { name = "my sgemm", call = "sgemm", m = "N", n = "M", k = "K" }, CUDA)
    assert.are.equal("my sgemm", named.name)
  end)

  it("refuses what it cannot time, naming the field and the fix", function()
    local msg, field = refusal("sgemm")
    assert.are.equal("library", field)
    assert.truthy(msg:find("expected table", 1, true))
    msg, field = refusal({ call = "sgem", m = "M", n = "N", k = "K" })
    assert.are.equal("library.call", field)
    assert.truthy(msg:find("did you mean 'sgemm'", 1, true), msg)
    msg, field = refusal({ m = "M", n = "N", k = "K" })
    assert.are.equal("library.call", field)
    assert.truthy(msg:find("expected string, got nothing", 1, true), msg)
    msg, field = refusal({ call = "sgemm", m = "M", n = "N", k = "K", alpha = 2 })
    assert.are.equal("library.alpha", field)
    assert.truthy(msg:find("unknown field 'alpha'", 1, true), msg)
    msg, field = refusal({ call = "sgemm", m = "M", n = "Nn", k = "K" })
    assert.are.equal("library.n", field)
    assert.truthy(msg:find("not a size of this task (sizes.bench has K, M, N)", 1, true), msg)
    assert.truthy(msg:find('fix: n = "N"', 1, true), msg)
    msg, field = refusal({ call = "sgemm", m = "M", n = "N" })
    assert.are.equal("library.k", field)
    assert.truthy(msg:find("nothing is not a size", 1, true), msg)
    msg, field = refusal({ call = "sgemm", m = "M", n = "N", k = "K", name = 3 })
    assert.are.equal("library.name", field)
    assert.truthy(msg:find("expected string", 1, true), msg)
    msg, field = refusal(GOOD, { backend = "host", sizes = CUDA.sizes })
    assert.are.equal("library", field)
    assert.truthy(msg:find("host task", 1, true), msg)
  end)

  it("is read from the gemm sidecars, and the child's command line carries the bench size", function()
    local task = assert(require("kloop.eval.task").load(root .. "/kernels/gemm_tiled.lua"))
    assert.are.same({ name = "cuBLAS sgemm", call = "sgemm", m = "M", n = "N", k = "K" }, task.library)
    local argv, dims = library.argv("kloop", task.library, task)
    assert.are.same({ "4096", "4096", "4096" }, dims)
    assert.are.equal("-e", argv[3])
    assert.truthy(argv[4]:find('child("sgemm", 4096, 4096, 4096, ', 1, true), argv[4])
  end)

  describe("the driver hook", function()
    local function ctx(task, rec)
      return { task = task, opts = { quiet = true }, run_id = 7,
        store = { db = { set_run_library = function(_, id, r) rec[#rec + 1] = { id, r } return true end } } }
    end
    local task = { backend = "cuda", sizes = { bench = { M = 64, N = 32, K = 16 } },
      library = { name = "cuBLAS sgemm", call = "sgemm", m = "M", n = "N", k = "K" } }

    it("is not called for a host task or a task without a library", function()
      local rec = {}
      assert.is_nil((library.at_start(ctx({ backend = "host", sizes = task.sizes, library = task.library }, rec),
        { exe = "/nonexistent/kloop" })))
      assert.is_nil((library.at_start(ctx({ backend = "cuda", sizes = task.sizes }, rec), { exe = "/nonexistent/kloop" })))
      assert.are.equal(0, #rec)
    end)

    it("skips cleanly when the timing child cannot run, and writes nothing", function()
      local rec = {}
      local r, msg = library.at_start(ctx(task, rec), { exe = "/nonexistent/kloop" })
      assert.is_nil(r)
      assert.is_string(msg)
      assert.are.equal(0, #rec)
    end)

    it("keeps a measurement per GPU, driver and size: the next run on that GPU reads it, another size measures", function()
      local g = { uuid = "GPU-spec-" .. require("kloop.core.sys").getpid(), driver_version = 13000, name = "spec" }
      local dir, file = library.cache_file(g, task)
      assert.is_string(file)
      local util = require("kloop.util")
      util.mkdir_p(dir)
      assert(util.write_file(file, require("cjson").encode({ library = "cuBLAS sgemm", library_ms = 1.25,
        library_size = "64x32x16", library_math = "default" })))
      local rec = {}
      local c = ctx(task, rec)
      c.gpu = g
      -- (a measurement would fail: the binary does not exist)
      local r = library.at_start(c, { exe = "/nonexistent/kloop" })
      os.remove(file)
      assert.is_table(r, "the kept measurement was not read")
      assert.are.equal(1.25, r.library_ms)
      assert.is_true(r.cached)
      assert.are.equal(1, #rec)
      -- another bench size, or another driver, is another file
      local other = { backend = "cuda", sizes = { bench = { M = 65, N = 32, K = 16 } }, library = task.library }
      assert.are_not.equal(file, select(2, library.cache_file(g, other)))
      assert.are_not.equal(file, select(2, library.cache_file({ uuid = g.uuid, driver_version = 13010 }, task)))
      assert.is_nil(library.cache_file({ uuid = "" }, task))
    end)

    -- the real store takes the kept measurement too: a fresh run on a GPU whose library
    -- was measured before must not fail after its baseline (it did: the kept table's
    -- cached mark is no run fact, and set_run_library refused it)
    it("records a kept measurement in a real store, without its cached mark", function()
      local g = { uuid = "GPU-spec2-" .. require("kloop.core.sys").getpid(), driver_version = 13000, name = "spec" }
      local dir, file = library.cache_file(g, task)
      local util = require("kloop.util")
      util.mkdir_p(dir)
      assert(util.write_file(file, require("cjson").encode({ library = "cuBLAS sgemm", library_ms = 1.25,
        library_size = "64x32x16", library_math = "default" })))
      local path = os.tmpname()
      os.remove(path)
      local db = assert(require("kloop.store.db").open(path))
      local run_id = assert(db:begin_run({ strategy_path = "s.lua", strategy_text = "", task_name = "t" }))
      local c = { task = task, opts = { quiet = true }, run_id = run_id, store = { db = db }, gpu = g }
      local ok, r = pcall(library.at_start, c, { exe = "/nonexistent/kloop" })
      os.remove(file)
      assert.is_true(ok, tostring(r))
      assert.are.equal(1.25, r.library_ms)
      assert.is_true(r.cached)
      local o = require("cjson").decode(db:query("SELECT options_json FROM runs WHERE id = ?", run_id)[1].options_json)
      assert.are.equal(1.25, o.library_ms)
      assert.is_nil(o.cached)
      db:close()
      os.remove(path)
    end)

    -- A stand-in child that speaks M.child's protocol: ready on fd 4, then the word on fd
    -- 3 (the go) appended to the mark file, and a reply. `mode` "die" exits before ready,
    -- "stall" never answers after its go.
    local sys = require("kloop.core.sys")
    local function fake(mark, mode)
      local chunk = string.format([[
        local proc = require("kloop.core.proc")
        local mode, mark = %q, %q
        if mode == "die" then os.exit(3) end
        if mode == "slow" then local t = os.clock() + 0.5 while os.clock() < t do end end
        proc.chan_send(4, '{"ready":true}')
        local word = proc.chan_recv(3)
        if not word then os.exit(4) end
        local f = io.open(mark, "a") f:write(word, "\n") f:close()
        if mode == "stall" then while true do end end
        proc.chan_send(4, '{"ok":true,"median_ms":1.5,"ci":[1.4,1.6],"n":30,"math_mode":"default"}')
      ]], mode or "", mark)
      return { sys.exe_path(), "-q", "-e", chunk }
    end
    local function words(mark)
      local t = {}
      local f = io.open(mark, "r")
      if not f then return t end
      for l in f:lines() do t[#t + 1] = l end
      f:close()
      return t
    end
    local function alive(pid) return os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0 end

    it("starts the timing child early, and lets it time only at at_start (the worker idle)", function()
      local mark = os.tmpname()
      os.remove(mark)
      local rec = {}
      local c = ctx(task, rec)
      library.early(c, { argv = fake(mark) })
      assert.is_table(c.library_child, "no child begun")
      -- the child is up and ready, and waits: no go, no timing yet
      assert.is_true(c.library_child.proc:ready(20))
      os.execute("sleep 0.2")
      assert.is_nil(io.open(mark, "r"), "the child timed before at_start")
      local r = library.at_start(c, { timeout_s = 20 })
      assert.is_table(r)
      assert.are.equal(1.5, r.library_ms)
      assert.are.same({ 1.4, 1.6 }, r.library_ci)
      assert.are.equal("64x32x16", r.library_size)
      assert.are.same({ "go" }, words(mark), "the child was never told to time")
      os.remove(mark)
      assert.is_nil(c.library_child)
      assert.are.equal(1, #rec)
    end)

    -- the driver's idle job asks is_ready at each compile wait: it must never wait for a
    -- child still loading cuBLAS, and the ready reply it reads must not be lost
    it("says whether the child is ready without waiting, and finishes on the reply it read", function()
      local mark = os.tmpname()
      os.remove(mark)
      local c = ctx(task, {})
      library.early(c, { argv = fake(mark, "slow") })
      local t0 = sys.now()
      assert.is_false(library.is_ready(c.library_child))
      assert.is_true(sys.now() - t0 < 0.1, "is_ready waited")
      local t1 = sys.now()
      while not library.is_ready(c.library_child) and sys.now() - t1 < 20 do c.library_child.proc:ready(0.01) end
      assert.is_true(library.is_ready(c.library_child))
      assert.is_true(library.is_ready(c.library_child), "asked twice, the reply it read was lost")
      local r = library.at_start(c, { timeout_s = 5 })
      assert.are.equal(1.5, r and r.library_ms)
      assert.are.same({ "go" }, words(mark))
      os.remove(mark)
      -- a child that died before ready: ready (nothing to wait for), and finish says so
      local d = ctx(task, {})
      library.early(d, { argv = fake(mark, "die") })
      local t2 = sys.now()
      while not library.is_ready(d.library_child) and sys.now() - t2 < 20 do d.library_child.proc:ready(0.01) end
      local r2, msg = library.at_start(d, { timeout_s = 1 })
      assert.is_nil(r2)
      assert.truthy(msg:find("the timing child", 1, true), msg)
    end)

    -- the driver's end of a run (kloop.search.driver Ctx:end_library): a reference no
    -- compile wait measured is measured once the search is done, its time the run's
    -- library; an interrupted run stops the child, measuring nothing
    it("is measured at the end of a done run, and not at the end of an interrupted one", function()
      local Ctx = require("kloop.search.driver").Ctx
      local mark = os.tmpname()
      os.remove(mark)
      local function run_ctx(rec)
        local c = setmetatable(ctx(task, rec), { __index = Ctx })
        c.ev = { idle_job = function() return false end }
        library.early(c, { argv = fake(mark) })
        return c
      end
      local rec = {}
      local c = run_ctx(rec)
      local pid = c.library_child.proc.pid
      c:end_library("interrupted")
      assert.is_nil(c.library_child)
      assert.is_false(alive(pid), "the child outlived an interrupted run")
      assert.are.same({}, words(mark), "an interrupted run let the child time")
      assert.are.equal(0, #rec)
      c = run_ctx(rec)
      c:end_library("done")
      assert.is_nil(c.library_child)
      assert.is_nil(c.ev.idle_job, "the idle job outlived the run")
      assert.are.same({ "go" }, words(mark))
      assert.are.equal(1, #rec)
      assert.are.equal(1.5, rec[1][2].library_ms)
      assert.is_true(c.spent.library > 0)
      os.remove(mark)
    end)

    -- the driver's idle job (Ctx:library_idle) at a compile wait: not at one expected to
    -- end before the reference would (it would hold the GPU past the wait), at one
    -- expected to hide it, and at any wait of the search's last batch
    it("is measured at a wait expected to hide it, or at any wait of the last batch", function()
      local driver = require("kloop.search.driver")
      local mark = os.tmpname()
      os.remove(mark)
      local function ready_ctx(rec)
        local c = setmetatable(ctx(task, rec), { __index = driver.Ctx })
        library.early(c, { argv = fake(mark) })
        local t0 = sys.now()
        while not library.is_ready(c.library_child) and sys.now() - t0 < 20 do c.library_child.proc:ready(0.01) end
        return c
      end
      local rec = {}
      local c = ready_ctx(rec)
      assert.is_false(c:library_idle(0.05))
      assert.is_false(c:library_idle(driver.LIBRARY_WAIT_S * 0.9))
      assert.are.same({}, words(mark), "timed at a wait too short to hide it")
      assert.is_true(c:library_idle(driver.LIBRARY_WAIT_S))
      assert.are.same({ "go" }, words(mark))
      assert.are.equal(1, #rec)
      assert.is_nil(c.library_child)
      assert.is_false(c:library_idle(10), "measured twice")
      os.remove(mark)
      c = ready_ctx(rec)
      c.last_batch = true
      assert.is_true(c:library_idle(0.01), "not measured at a short wait of the last batch")
      assert.are.equal(2, #rec)
      os.remove(mark)
    end)

    it("says a child that died, or that stalls after its go, and the search goes on", function()
      local mark = os.tmpname()
      os.remove(mark)
      for _, mode in ipairs({ "die", "stall" }) do
        local rec = {}
        local c = ctx(task, rec)
        library.early(c, { argv = fake(mark, mode) })
        local pid = c.library_child.proc.pid
        local t0 = sys.now()
        local r, msg = library.at_start(c, { timeout_s = 1 })
        assert.is_nil(r, mode)
        assert.truthy(msg:find("the timing child", 1, true), msg)
        assert.is_true(sys.now() - t0 < 2.5, mode .. ": not bounded by the timeout")
        assert.are.equal(0, #rec)
        assert.is_false(alive(pid), mode .. ": the child outlived at_start")
      end
      os.remove(mark)
    end)

    it("stops a begun child when the run ends before at_start, and begins none with a kept measurement", function()
      local mark = os.tmpname()
      os.remove(mark)
      local c = ctx(task, {})
      library.early(c, { argv = fake(mark) })
      local pid = c.library_child.proc.pid
      assert.is_true(alive(pid))
      library.abandon(c.library_child)
      assert.is_false(alive(pid))
      assert.are.same({}, words(mark))
      -- a resumed run, and a GPU with the reference kept, start no child
      local resumed = ctx(task, {})
      resumed.store.resumed = true
      library.early(resumed, { argv = fake(mark) })
      assert.is_nil(resumed.library_child)
      local g = { uuid = "GPU-spec-early-" .. sys.getpid(), driver_version = 13000 }
      local dir, file = library.cache_file(g, task)
      local util = require("kloop.util")
      util.mkdir_p(dir)
      assert(util.write_file(file, require("cjson").encode({ library = "cuBLAS sgemm", library_ms = 1.25 })))
      local warm = ctx(task, {})
      warm.gpu = g
      library.early(warm, { argv = fake(mark) })
      assert.is_nil(warm.library_child)
      -- (what the driver asks right after its probe, to stop a prestarted child at once)
      assert.is_true(library.is_kept(g, task))
      assert.is_false(library.is_kept({ uuid = g.uuid .. "-other", driver_version = 13000 }, task))
      assert.is_false(library.is_kept(nil, task))
      -- a child begun before the probe (prestart) is kept by a fresh run, and stopped by a
      -- resumed one and where the reference is kept: none of those is left running
      assert.is_nil(library.prestart({ backend = "host", library = task.library, sizes = task.sizes }))
      assert.is_nil(library.prestart({ backend = "cuda", sizes = task.sizes }))
      local function pre() return assert(library.prestart(task, { argv = fake(mark) })) end
      for _, c2 in ipairs({ resumed, warm }) do
        c2.library_child = nil
        local h = pre()
        assert.is_true(alive(h.proc.pid))
        library.early(c2, nil, h)
        assert.is_nil(c2.library_child)
        assert.is_false(alive(h.proc.pid), "a prestarted child not needed was left running")
      end
      os.remove(file)
      local fresh = ctx(task, {})
      local h = pre()
      library.early(fresh, nil, h)
      assert.are.equal(h, fresh.library_child)
      local r = library.at_start(fresh, { timeout_s = 20 })
      assert.are.equal(1.5, r and r.library_ms)
      assert.are.same({ "go" }, words(mark))
      os.remove(mark)
    end)

    it("measures in a child (here: no GPU or no cuBLAS, a clean miss; on a GPU, a time that is stored)", function()
      local rec = {}
      local r, msg = library.at_start(ctx(task, rec), { timeout_s = 60 })
      if r then
        assert.is_true(r.library_ms > 0)
        assert.are.equal("64x32x16", r.library_size)
        assert.are.equal(1, #rec)
        assert.are.equal(7, rec[1][1])
      else
        assert.is_string(msg)
        assert.are.equal(0, #rec)
      end
    end)
  end)

  describe("in the store and the report", function()
    local path, ids
    setup(function() path, ids = make_store() end)
    teardown(function() for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. s) end end)

    it("merges into the run's options and draws the line with its label", function()
      local db = assert(store.open(path, { create = false }))
      assert.has_error(function() db:set_run_library(ids.run_a, { library = "x" }) end)
      assert.has_error(function() db:set_run_library(ids.run_a, { library_ms = 1, bogus = 1 }) end)
      local none, nerr = db:set_run_library(999999, { library = "cuBLAS sgemm", library_ms = 2.5 })
      assert.is_nil(none)
      assert.truthy(nerr:find("no run", 1, true))
      assert.is_true(db:set_run_library(ids.run_a, { library = "cuBLAS sgemm", library_ms = 2.5,
        library_ci = { 2.4, 2.6 }, library_math = "default (fp32, no TF32)", library_size = "4096x4096x4096" }))
      local o = require("kloop.store.json").from_json(db:query("SELECT options_json FROM runs WHERE id = ?",
        ids.run_a)[1].options_json)
      db:close()
      assert.are.equal("m-a,m-b", o.model) -- what was there stays
      assert.are.equal(2.5, o.library_ms)
      assert.are.same({ 2.4, 2.6 }, o.library_ci)
      local d = assert(build.gather(path, { ids.run_a }))
      assert.are.equal(2.5, d.runs[1].run.lines.library_ms)
      assert.are.equal("cuBLAS sgemm", d.runs[1].run.lines.library_name)
      local page = html.render(d)
      assert.truthy(page:find("cuBLAS sgemm 2.500 ms", 1, true))
      assert.is_nil(page:find("library reference: n/a", 1, true))
      -- a run without one still says why
      local other = html.render(assert(build.gather(path, { ids.run_b })))
      assert.is_nil(other:find("cuBLAS", 1, true))
      assert.truthy(other:find("library reference", 1, true))
    end)
  end)
end)
