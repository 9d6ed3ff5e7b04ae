-- tests/spec/time_line_spec.lua: the summary's time line (kloop.search.progress
-- time_text) says where a run's wall time went, each second once: the compiles queued
-- (queueing) without the worker's start a first precompile waits for, the library
-- reference's timing, the evaluator's host work, and the rest as other.
local driver = require("kloop.search.driver")
local progress = require("kloop.search.progress")
local sys = require("kloop.core.sys")

local function spin(s)
  local t = sys.now()
  while sys.now() - t < s do end
end

describe("the time line", function()
  it("counts a precompile's queueing without the worker start inside it", function()
    -- an evaluator whose precompile starts the worker (0.08 s, counted by it as start)
    -- and then queues for 0.02 s
    local ev = { spent = { start = 0, compile = 0, worker = 0 } }
    function ev:precompile()
      local t = sys.now()
      spin(0.08)
      self.spent.start = self.spent.start + (sys.now() - t)
      spin(0.02)
    end
    local ctx = setmetatable({ ev = ev, opts = {}, history = {} }, driver.Ctx)
    ctx:queue_precompile({ {} }, true)
    assert.is_true(ctx.spent.queue >= 0.015 and ctx.spent.queue < 0.05,
      "queue " .. ctx.spent.queue .. " s: the worker's start counted twice")
    assert.is_true(ev.spent.start >= 0.08)
  end)

  it("names each part and leaves the rest as other", function()
    local ctx = { ev = { spent = { start = 1.0, compile = 0.2, worker = 10.6, host = 0.1 }, waited_compiles = 3, prepared = 111,
      waited_by = { compiling = 1, ["not foreseen"] = 2 } },
      spent = { queue = 0.2, library = 0.9, propose = 0.1, ab = 0.5 } }
    local line = progress.time_text(ctx, 13.8)
    for _, part in ipairs({ "worker start 1.0 s", "compiling 0.2 s (waited for 3 of 111 binaries: 1 compiling, 2 not foreseen)",
        "worker 10.6 s (A/B 0.5 s of it)", "host prep 0.1 s", "queueing 0.2 s", "library 0.9 s", "propose 0.1 s",
        "other 0.7 s" }) do
      assert.truthy(line:find(part, 1, true), part .. " missing from: " .. line)
    end
    -- nothing left over: no other
    assert.is_nil(progress.time_text(ctx, 13.1):find("other", 1, true))
  end)
end)
