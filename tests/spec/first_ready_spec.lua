-- tests/spec/first_ready_spec.lua: Evaluator:first_ready, the one-worker batch's next
-- candidate: the first (in the caller's order) whose binary is ready or not pending;
-- while all are still compiling, a wait for whichever finishes first, counted as
-- compiling, with the strategy's think fired at its start. Real NVRTC, no GPU.
local compile = require("kloop.eval.compile")
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local native = require("kloop.native")
local sys = require("kloop.core.sys")

describe("Evaluator:first_ready", function()
  after_each(function() compile.cancel_background() end)
  local task = assert(taskmod.load(native.source_dir .. "/kernels/saxpy.lua"))
  local function evaluator(think_s)
    local ev = eval.new(task, { compile_parallel = 1 })
    ev.arch, ev.ready = "sm_90", true
    local fired = 0
    ev.on_sent = function()
      fired = fired + 1
      local t = sys.now()
      while sys.now() - t < (think_s or 0) do end
    end
    return ev, function() return fired end
  end
  local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
  local function cand(k) return { source = task.source .. "\n// first_ready " .. nonce .. " " .. k .. "\n" } end

  it("takes the first ready one in the caller's order, without a wait or think", function()
    local ev, fired = evaluator()
    local c1, c2 = cand(1), cand(2)
    ev:queue_compiles({ c1, c2 }) -- one compiler: c1 compiles, c2 is queued behind it
    local job = ev:compile_jobs(c1)[1]
    local t0 = sys.now()
    while not compile.ready(job) and sys.now() - t0 < 60 do compile.pump(10) end
    assert.is_true(compile.pending(ev:compile_jobs(c2)[1]), "c2 should still be pending")
    assert.are.equal(2, ev:first_ready({ c2, c1 }))
    assert.are.equal(0, ev.waited_compiles or 0)
    assert.are.equal(0, fired())
    -- one with nothing pending compiles when evaluated: ready for this purpose
    assert.are.equal(1, ev:first_ready({ cand(3), c2 }))
  end)

  -- more: candidates looked at only when all of cands still compile (the driver's run
  -- ahead), taken at once when one of them is ready
  it("asks more only when all compile, and takes a ready one of it without a wait", function()
    local ev, fired = evaluator()
    local c6, c7, ready = cand(6), cand(7), cand(8)
    ev:queue_compiles({ ready })
    local job = ev:compile_jobs(ready)[1]
    local t0 = sys.now()
    while not compile.ready(job) and sys.now() - t0 < 60 do compile.pump(10) end
    local asked = 0
    local function more() asked = asked + 1 return { ready } end
    assert.are.equal(1, ev:first_ready({ ready, c6 }, more))
    assert.are.equal(0, asked, "more was asked with a ready candidate in hand")
    ev:queue_compiles({ c6, c7 }) -- (one compiler: c6 compiles, c7 waits)
    local list = { c6, c7 }
    assert.are.equal(3, ev:first_ready(list, more))
    assert.are.equal(1, asked)
    assert.are.equal(ready, list[3])
    assert.are.equal(0, ev.waited_compiles or 0)
    assert.are.equal(0, fired())
  end)

  it("waits for whichever finishes first while all compile, and runs think in the wait", function()
    local ev, fired = evaluator(0.05)
    local c4, c5 = cand(4), cand(5)
    ev:queue_compiles({ c4, c5 }) -- c4 compiles first, c5 after it
    local i = ev:first_ready({ c5, c4 })
    assert.are.equal(2, i, "c4 finishes first")
    assert.is_true(compile.ready(ev:compile_jobs(c4)[1]))
    assert.are.equal(1, ev.waited_compiles)
    assert.are.equal(1, ev.waited_by.compiling)
    assert.are.equal(1, fired())
    -- think's time is think's, not compiling's
    assert.is_true(ev.spent.think >= 0.05, tostring(ev.spent.think))
    local w = ev.spent.compile
    assert.is_true(w > 0)
    local t0 = sys.now()
    local again = ev:first_ready({ c5 }) -- (c5 compiles now: a wait with no think)
    assert.are.equal(1, again)
    assert.is_true(math.abs((ev.spent.compile - w) - (sys.now() - t0)) < 0.02)
  end)
  -- idle_job: work that needs the GPU idle (the driver's library reference) is asked in
  -- a compile wait, with the seconds the wait is expected to last still, again and again
  -- until it says it ran; never where a binary is ready (no wait), and its time is not
  -- counted as compiling
  it("asks an idle job through a compile wait until it says it ran, its time not compiling's", function()
    local ev = evaluator()
    local calls, ran, willing, lefts = 0, 0, false, {}
    ev.idle_job = function(left)
      calls = calls + 1
      lefts[#lefts + 1] = left
      if not willing then return false end -- (not ready: asked again)
      ran = ran + 1
      local t = sys.now()
      while sys.now() - t < 0.3 do end
      return true
    end
    local ca, cb, cc = cand(10), cand(11), cand(12)
    ev:queue_compiles({ ca })
    assert.are.equal(1, ev:first_ready({ ca }))
    assert.is_true(calls >= 1, "not asked in a wait")
    assert.are.equal(0, ran)
    for _, l in ipairs(lefts) do assert.is_number(l) assert.is_true(l >= 0) end
    assert.is_function(ev.idle_job, "a job that did not run was dropped")
    -- a ready binary: no wait, the job is not asked
    local asked = calls
    assert.are.equal(1, ev:first_ready({ ca }))
    assert.are.equal(asked, calls)
    willing = true
    ev:queue_compiles({ cb })
    local w0 = ev.spent.compile or 0
    local t0 = sys.now()
    assert.are.equal(1, ev:first_ready({ cb }))
    local wall = sys.now() - t0
    assert.are.equal(1, ran)
    assert.is_nil(ev.idle_job, "a job that ran stays")
    assert.is_true(wall >= 0.3)
    assert.is_true((ev.spent.compile - w0) < wall - 0.25,
      string.format("the job's time was counted as compiling (%.2f of %.2f s)", ev.spent.compile - w0, wall))
    asked = calls
    ev:queue_compiles({ cc })
    assert.are.equal(1, ev:first_ready({ cc }))
    assert.are.equal(asked, calls, "a job that ran was asked again")
    -- one that declines at a wait's start (the wait looked short) is asked again in it,
    -- and runs there once it accepts
    local asks, ran_in = 0, nil
    ev.idle_job = function()
      asks = asks + 1
      if asks < 2 then return false end
      ran_in = asks
      return true
    end
    local cd = cand(13)
    ev:queue_compiles({ cd })
    local ask_s = eval.IDLE_ASK_S
    eval.IDLE_ASK_S = 0.001 -- (a compile far longer than the asks' interval)
    local okw, errw = pcall(ev.first_ready, ev, { cd })
    eval.IDLE_ASK_S = ask_s
    assert(okw, errw)
    assert.are.equal(2, ran_in, "asked once a wait only")
  end)

  -- what the wait is expected to last: compiles as long as the run's have taken so far
  -- (kloop.eval.compile.expected_left), the least over the candidates waited for
  it("expects a wait to last what the compiles that ended say, the least over its candidates", function()
    local bg = compile.background
    compile.forget_walls()
    assert.is_nil(compile.expected_left("no such key"))
    bg.by_key["k_queued"] = { key = "k_queued" }
    bg.by_key["k_running"] = { key = "k_running", cjob = {}, started = sys.now() - 1.0 }
    local ok, err = pcall(function()
      -- too few ended to tell: nothing to expect
      for _, w in ipairs({ 0.2, 0.4, 1.5, 2.5 }) do compile.note_wall(w) end
      assert.are.equal(0, compile.expected_left("k_queued"))
      assert.are.equal(0, compile.expected_left("k_running"))
      for _, w in ipairs({ 0.3, 0.5, 1.2, 1.8 }) do compile.note_wall(w) end
      -- queued: the mean wall; compiling for 1 s: the mean of what the walls past 1 s ran on
      assert.is_true(math.abs(compile.expected_left("k_queued") - 1.05) < 1e-9)
      assert.is_true(math.abs(compile.expected_left("k_running") - 0.75) < 0.01)
      -- past every wall seen (or all but one): the run cannot tell, nothing to expect (an
      -- early heavy compile looked endless beside the light ones that ended first)
      bg.by_key["k_running"].started = sys.now() - 2.0
      assert.are.equal(0, compile.expected_left("k_running"))
      bg.by_key["k_running"].started = sys.now() - 3.0
      assert.are.equal(0, compile.expected_left("k_running"))
      -- a done job is not pending
      bg.by_key["k_queued"].done = true
      assert.is_nil(compile.expected_left("k_queued"))
      -- the evaluator's wait: the least of its candidates' (each its longest pending job)
      local ev = evaluator()
      local c1, c2 = cand(21), cand(22)
      ev:compile_counts(c1)
      ev:compile_counts(c2)
      local k1, k2 = ev.count_jobs[c1].jobs[1].key, ev.count_jobs[c2].jobs[1].key
      bg.by_key[k1] = { key = k1, cjob = {}, started = sys.now() - 1.0 }
      bg.by_key[k2] = { key = k2 }
      assert.is_true(math.abs(ev:wait_left({ c1, c2 }) - 0.75) < 0.01)
      bg.by_key[k1] = { key = k1 }
      bg.by_key[k2] = { key = k2, cjob = {}, started = sys.now() - 0.1 }
      assert.is_true(math.abs(ev:wait_left({ c1, c2 }) - 0.95) < 0.01)
      bg.by_key[k2].done = true
      assert.are.equal(0, ev:wait_left({ c1, c2 }))
      bg.by_key[k1], bg.by_key[k2] = nil, nil
    end)
    bg.by_key["k_queued"], bg.by_key["k_running"] = nil, nil
    compile.forget_walls()
    assert(ok, err)
  end)

  -- sliced (kloop.search.slice): the wait steps the think between looks at the binaries,
  -- so a binary that is ready runs at once, with the rest of the think left for the
  -- requests after it; where none is ready before the think ends, what it names is
  -- looked for then (more)
  it("steps a sliced think in the wait and takes a binary as soon as it is ready", function()
    local slice = require("kloop.search.slice")
    local ev = evaluator()
    local slices, done = 0, false
    ev.on_sent = function()
      -- (far longer than a compile: about 4 s in slices of 2 ms)
      for _ = 1, 2000 do
        local t = sys.now()
        while sys.now() - t < 0.002 do end
        slices = slices + 1
        slice.point()
      end
      done = true
    end
    ev.slice_think = slice.job
    local c9 = cand(9)
    ev:queue_compiles({ c9 })
    local asked = 0
    local t0 = sys.now()
    local i = ev:first_ready({ c9 }, function() asked = asked + 1 return {} end)
    local waited = sys.now() - t0
    assert.are.equal(1, i)
    assert.is_true(compile.ready(ev:compile_jobs(c9)[1]))
    assert.is_false(done, "the think was run whole before the binary was taken")
    assert.is_true(slices > 0, "no slice of the think ran in the wait")
    assert.is_truthy(ev.think_job and not ev.think_job.done)
    assert.are.equal(0, asked, "more was asked before the think was done")
    assert.is_true(waited < 3.5, string.format("the wait took %.1f s", waited))
    assert.is_true(ev.spent.think > 0)
  end)
end)
