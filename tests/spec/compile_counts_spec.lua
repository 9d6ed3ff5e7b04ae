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
      -- compiled since the last ask (as the background compilers do): ready now
      local jobs = ev:compile_jobs(c)
      compile.run(jobs)
      if not jobs[1].ok then
        assert.truthy(tostring(jobs[1].log):lower():find("nvrtc", 1, true), tostring(jobs[1].log))
        return
      end
      assert.are.same({ 1, 0, 0 }, { ev:compile_counts(c) })
      -- another arch: other binaries, none compiled
      ev.arch = "sm_80"
      assert.are.same({ 0, 0, 1 }, { ev:compile_counts(c) })
      ev.arch = "sm_90"
      assert.are.same({ 1, 0, 0 }, { ev:compile_counts(c) })
      -- the same table with other defines (a strategy that reuses its tables) is another point
      c.defines = { BLOCK = 256 }
      assert.are.same({ 0, 0, 1 }, { ev:compile_counts(c) })
    end
  end)
end)
