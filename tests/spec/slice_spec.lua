-- tests/spec/slice_spec.lua: a strategy's think cut into slices (kloop.search.slice) so
-- that the worker is fed while it runs: the slices yield only inside a sliced think; a
-- think that outlasts a request goes on in the next ones; the driver settles no result
-- of the batch, and calls no on_result, before the think is done. The last part runs a
-- real host task (examples/cpu/sgemm_blocked.c) through the driver; no GPU.
local slice = require("kloop.search.slice")
local sys = require("kloop.core.sys")
local driver = require("kloop.search.driver")

describe("kloop.search.slice", function()
  it("yields only inside a job, once its quantum is spent, and never inside whole()", function()
    -- outside a job: nothing happens (a propose, a bench)
    slice.point()
    local steps, marks = 0, {}
    local job = slice.job(function()
      for i = 1, 6 do
        marks[#marks + 1] = i
        local t0 = sys.now()
        while sys.now() - t0 < 0.003 do end
        slice.point()
      end
      slice.whole(function()
        for i = 7, 9 do
          marks[#marks + 1] = i
          local t0 = sys.now()
          while sys.now() - t0 < 0.003 do end
          slice.point()
        end
      end)
    end)
    while not job:step(0.001) do steps = steps + 1 end
    -- six yields (each mark past the quantum), none inside whole()
    assert.are.equal(6, steps)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, marks)
    assert.is_true(job.done)
    assert.is_true(job:step())
  end)

  it("raises a job's error where it is stepped, and finish runs it to its end", function()
    local bad = slice.job(function() slice.point() error("think broke", 0) end)
    assert.has_error(function() bad:finish() end, "think broke")
    local n = 0
    local job = slice.job(function()
      for _ = 1, 50 do n = n + 1 slice.point() end
    end)
    job:step(0) -- (a quantum of 0: yields at the first point)
    assert.are.equal(1, n)
    job:finish()
    assert.are.equal(50, n)
  end)
end)

-- The worker client's side, on a stand-in for the worker's pipe (no worker process): what
-- a sliced think does to the requests around it when something goes wrong.
describe("a sliced think in the worker client", function()
  local eval = require("kloop.eval.evaluator")
  local compile = require("kloop.eval.compile")
  local function client(replies_after)
    local polls, sent, killed = 0, {}, false
    local ev = eval.new(assert(require("kloop.eval.task").load("examples/cpu/sgemm_blocked.c")), {})
    ev.proc = {
      send = function(_, text) sent[#sent + 1] = text return true end,
      ready = function() polls = polls + 1 return polls > replies_after end,
      recv = function() return '{"verdict":"ok"}' end,
      tail = function() return "" end,
      kill = function() killed = true end,
    }
    return ev, sent, function() return killed end
  end
  local function busy(ms)
    local t0 = sys.now()
    while sys.now() - t0 < ms / 1000 do end
  end

  -- a Ctrl-C (or a failing compiler read) served between slices leaves the request
  -- unanswered: the worker is stopped, so no later request reads this one's reply
  it("stops the worker when an error comes between slices", function()
    local ev, _, killed = client(1e9)
    ev.slice_think = slice.job
    ev.on_sent = function() for _ = 1, 50 do busy(1) slice.point() end end
    local real = compile.pump
    compile.pump = function() error(sys.INTERRUPTED, 0) end
    local ok, err = pcall(ev.request, ev, { op = "evaluate" }, 5)
    compile.pump = real
    assert.is_false(ok)
    assert.is_true(sys.is_interrupt(err), tostring(err))
    assert.is_true(killed(), "the worker was left running with its reply unread")
  end)

  -- the rest of a think that fire_think runs whole (the batch's requests are over) may
  -- make a request of its own, as a think run whole always could: it gets its own reply
  it("lets the rest of a think run by fire_think make a request of its own", function()
    local ev, sent = client(2) -- (the reply is not in at the first looks)
    local got
    local job = slice.job(function()
      busy(3)
      slice.point()
      got = ev:request({ op = "evaluate" }, 5)
    end)
    assert.is_false(job:step(0.001))
    ev.think_job = job
    ev:fire_think()
    assert.is_true(job.done)
    assert.are.equal(1, #sent)
    assert.are.equal("ok", got and got.verdict)
  end)
end)

describe("a sliced think in the driver (host task)", function()
  local TASK = "examples/cpu/sgemm_blocked.c"
  local POINTS = {
    { TI = 8, TJ = 32, TK = 16 }, { TI = 16, TJ = 64, TK = 32 }, { TI = 32, TJ = 128, TK = 64 },
    { TI = 64, TJ = 256, TK = 128 }, { TI = 8, TJ = 64, TK = 128 }, { TI = 16, TJ = 32, TK = 64 },
    { TI = 32, TJ = 256, TK = 16 }, { TI = 64, TJ = 32, TK = 32 }, { TI = 8, TJ = 128, TK = 32 },
  }

  -- batches of 3 fixed points; each think burns `think_s` of CPU in small steps with
  -- slice.point() between them, noting per slice the worker requests sent so far and the
  -- history's length; on_result notes whether its batch's think was done
  local function run(think_s)
    local source = assert(io.open(TASK)):read("*a")
    local step, log = 0, { thinks = {}, early = 0, results = 0 }
    local strategy = {
      name = "slice_probe",
      propose = function()
        step = step + 1
        if step > 3 then return nil end
        local out = {}
        for k = 1, 3 do
          out[k] = { source = source, defines = POINTS[3 * (step - 1) + k], proposer = "tune" }
        end
        log.pending = { done = false, sent = {}, history = {} }
        return out
      end,
      think = function(ctx)
        local t = log.pending
        log.thinks[#log.thinks + 1] = t
        local t0 = sys.now()
        while sys.now() - t0 < think_s do
          t.sent[#t.sent + 1] = ctx.ev.sent_count or 0
          t.history[#t.history + 1] = #ctx.history
          local t1 = sys.now()
          while sys.now() - t1 < 0.001 do end
          slice.point()
        end
        t.done = true
        return nil
      end,
      on_result = function()
        log.results = log.results + 1
        if log.pending and not log.pending.done then log.early = log.early + 1 end
      end,
    }
    local rc = driver.run(strategy, "slice_probe.lua", { TASK, "--budget", "9", "--no-store", "--quiet",
      "--promote", "off", "--profile", "none", "--seed", "1", "--timing-budget", "0.05" })
    return rc, log
  end

  local function spans(t)
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(t.sent) do lo, hi = math.min(lo, v), math.max(hi, v) end
    return hi - lo
  end

  it("goes on through the batch's next requests, and nothing of the batch settles before it is done", function()
    local rc, log = run(0.4)
    assert.are.equal(0, rc)
    assert.are.equal(9, log.results)
    assert.are.equal(3, #log.thinks)
    local spanned = 0
    for i, t in ipairs(log.thinks) do
      assert.is_true(t.done, "think " .. i .. " never finished")
      -- no result of the batch reached the history while its think ran
      for _, h in ipairs(t.history) do assert.are.equal(t.history[1], h, "think " .. i .. " saw a result settle") end
      if spans(t) > 0 then spanned = spanned + 1 end
    end
    -- (a think of 0.4 s outlasts a request of this task: the requests after the one it
    -- began in went out while it ran)
    assert.is_true(spanned >= 2, "no think ran across requests: " .. spanned .. " of 3")
    assert.are.equal(0, log.early, "on_result ran before its batch's think was done")
  end)

  it("runs whole inside its first request when slicing is off", function()
    slice.enabled = false
    local ok, rc, log = pcall(run, 0.2)
    slice.enabled = true
    assert.is_true(ok, tostring(rc))
    assert.are.equal(0, rc)
    assert.are.equal(3, #log.thinks)
    for i, t in ipairs(log.thinks) do assert.are.equal(0, spans(t), "think " .. i .. " was sliced") end
  end)
end)
