-- tests/spec/compile_counts_spec.lua: Evaluator:compile_counts keeps each candidate's
-- compile jobs (their keys hashed once per candidate and arch), and still says what is
-- ready now: a binary compiled since the last ask counts as ready, another arch (a
-- hello that named another) is asked of afresh, and a candidate whose source or
-- defines are not the kept ones is too.
local eval = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local compile = require("kloop.eval.compile")

describe("Evaluator:compile_counts", function()
  it("follows compiles done since, another arch and another point of the same table", function()
    -- (a source no cache has seen: the kernel with a comment of this run's own)
    local sys = require("kloop.core.sys")
    local task = assert(taskmod.load("kernels/saxpy.lua"))
    local src = task.source .. "\n// compile_counts_spec " .. sys.hex64(sys.hash64(assert(sys.random_bytes(8)))) .. "\n"
    do
      local ev = eval.new(task, { arch = "sm_90", compile_background = false })
      ev.arch = "sm_90"
      local c = { source = src, defines = { BLOCK = 128 } }
      local ready, pending, none = ev:compile_counts(c)
      assert.are.same({ 0, 0, 1 }, { ready, pending, none }, "an empty cache")
      assert.are.equal(0, select(4, ev:compile_counts(c)))
      -- compiled since the last ask (as the background compilers do): ready now
      local jobs = ev:compile_jobs(c)
      compile.run(jobs)
      if not jobs[1].ok then
        assert.truthy(tostring(jobs[1].log):lower():find("nvrtc", 1, true), tostring(jobs[1].log))
        return
      end
      assert.are.same({ 1, 0, 0, 0 }, { ev:compile_counts(c) })
      -- another arch: other binaries, none compiled
      ev.arch = "sm_80"
      assert.are.same({ 0, 0, 1, 0 }, { ev:compile_counts(c) })
      ev.arch = "sm_90"
      assert.are.same({ 1, 0, 0, 0 }, { ev:compile_counts(c) })
      -- the same table with other defines (a strategy that reuses its tables) is another point
      c.defines = { BLOCK = 256 }
      assert.are.same({ 0, 0, 1, 0 }, { ev:compile_counts(c) })
      -- in the background: pending, then ready; a compile error ready and failed
      local bad = { source = src .. "\n#error kloop compile_counts_spec\n" }
      local bjobs = ev:compile_jobs(c)
      for _, j in ipairs(ev:compile_jobs(bad)) do bjobs[#bjobs + 1] = j end
      compile.run(bjobs, { background = true })
      assert.are.same({ 0, 1, 0, 0 }, { ev:compile_counts(c) }, "a queued compile is not pending")
      assert.are.same({ 0, 1, 0, 0 }, { ev:compile_counts(bad) })
      local t0 = sys.now()
      while (compile.pending(bjobs[1]) or compile.pending(bjobs[2])) and sys.now() - t0 < 60 do compile.pump(50) end
      assert.are.same({ 1, 0, 0, 0 }, { ev:compile_counts(c) })
      assert.are.same({ 1, 0, 0, 1 }, { ev:compile_counts(bad) }, "a failed compile is not said")
    end
  end)
end)
