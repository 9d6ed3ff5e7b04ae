-- tests/spec/compile_bg_spec.lua: background compiles (kloop.eval.compile): a batch
-- about to run (urgent) starts at once, ahead of the guesses queued for later, even
-- when the guesses fill every slot. Real NVRTC (no GPU needed).
local compile = require("kloop.eval.compile")
local sys = require("kloop.core.sys")

describe("kloop.eval.compile background jobs", function()
  after_each(function() compile.cancel_background() end)

  local function jobs(tag, n)
    local out = {}
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    for k = 1, n do
      out[k] = assert(compile.prepare(string.format('extern "C" __global__ void k%d(float *x) { x[0] = %d; }', k, k),
        { arch = "sm_90", name = tag .. k .. ".cu", defines = { KLOOP_SPEC_NONCE = nonce } }))
    end
    return out, nonce
  end

  it("leaves slots free for an urgent batch where there are enough", function()
    local bg = compile.background
    compile.run(jobs("g", 10), { background = true, parallel = 8 })
    assert.are.equal(8 - compile.URGENT_RESERVE, #bg.running)
    assert.are.equal(10 - (8 - compile.URGENT_RESERVE), #bg.queue)
    compile.cancel_background()
    -- (too few slots to keep any: all of them work)
    compile.run(jobs("h", 5), { background = true, parallel = 2 })
    assert.are.equal(2, #bg.running)
  end)

  -- the batch think chooses is mostly among the guesses queued before it
  it("starts the queued guesses an urgent batch names, and the rest of it first in the queue", function()
    local bg = compile.background
    local guesses = jobs("q", 16)
    compile.run(guesses, { background = true, parallel = 8 })
    assert.are.equal(8 - compile.URGENT_RESERVE, #bg.running)
    local again = { guesses[13], guesses[14], guesses[15], guesses[16] }
    compile.run(again, { background = true, parallel = 8, urgent = true })
    local running = {}
    for _, j in ipairs(bg.running) do running[j.key] = true end
    for _, j in ipairs(again) do assert.is_true(running[j.key] == true, j.name .. " is still queued") end
    assert.are.equal(8, #bg.running)
    assert.are.equal(16 - 8, #bg.queue)
    -- past the slots: first in the queue, not started
    local more = jobs("u", 3)
    compile.run(more, { background = true, parallel = 8, urgent = true })
    assert.are.equal(8, #bg.running)
    for k, j in ipairs(more) do assert.are.equal(j.key, bg.queue[k].key) end
  end)

  -- an urgent job queued past the slots starts in the first slot that frees, the
  -- guesses' reserve included: it waits for one compile to end, not for the running
  -- guesses to fall below their cap
  it("starts a queued urgent job in the first free slot", function()
    local bg = compile.background
    compile.run(jobs("r", 16), { background = true, parallel = 8 })
    local cap = 8 - compile.URGENT_RESERVE
    local batch = jobs("now", compile.URGENT_RESERVE + 2)
    compile.run(batch, { background = true, parallel = 8, urgent = true })
    assert.are.equal(8, #bg.running)
    local queued = { batch[#batch - 1], batch[#batch] }
    for k, j in ipairs(queued) do assert.are.equal(j, bg.queue[k]) end
    -- one compile ends (here: one guess stopped and dropped, at once, before the others
    -- can end): the next pump starts the first queued urgent job, with 7 still running
    local gone = table.remove(bg.running, #bg.running)
    require("kloop.core.nvrtc").kill(gone.cjob)
    compile.pump(0)
    assert.is_truthy(queued[1].cjob, string.format("not started with %d running (the guesses' cap is %d)", #bg.running, cap))
  end)

  -- the time line says what a wait was for (kloop.search.progress)
  it("says what an evaluation waited for: a guess queued, one compiling, or none foreseen", function()
    local guesses, nonce = jobs("w", 3)
    compile.run(guesses, { background = true, parallel = 1 })
    local function get(j)
      return compile.compile(j.src, { arch = "sm_90", name = j.name, defines = { KLOOP_SPEC_NONCE = nonce } })
    end
    assert.are.equal("compiling", get(guesses[1]).wait_state)
    assert.are.equal("queued", get(guesses[3]).wait_state)
    local fresh = jobs("f", 1)[1]
    local got = compile.compile(fresh.src, { arch = "sm_90", name = fresh.name,
      defines = { KLOOP_SPEC_NONCE = fresh.options[#fresh.options]:match("=(.*)$") } })
    assert.is_true(got.ok, got.log)
    assert.are.equal("not foreseen", got.wait_state)
  end)

  it("puts an urgent batch ahead of queued guesses when every slot is taken", function()
    local bg = compile.background
    local guesses = jobs("guess", 4)
    compile.run(guesses, { background = true, parallel = 1 })
    assert.are.equal(1, #bg.running)
    assert.are.equal(3, #bg.queue)
    local batch, nonce = jobs("batch", 2)
    compile.run(batch, { background = true, parallel = 1, urgent = true })
    assert.are.equal(1, #bg.running)
    assert.are.equal(5, #bg.queue)
    for k, j in ipairs(batch) do assert.are.equal(j.key, bg.queue[k].key, j.name .. " is not first in the queue") end
    -- and each is waited for and compiles
    for _, j in ipairs(batch) do
      local got = compile.compile(j.src, { arch = "sm_90", name = j.name, defines = { KLOOP_SPEC_NONCE = nonce } })
      assert.is_true(got.ok, got.log)
    end
  end)

  -- a failure is not cached: read by a pump (a request waiting on the worker reads them
  -- all the time), it must still be there for the evaluation that asks for it, not
  -- compiled a second time (a compile that ran into the deadline would cost it twice)
  it("keeps a failed background compile for the evaluation that asks for it", function()
    local nonce = sys.hex64(sys.hash64(assert(sys.random_bytes(8))))
    local src = 'extern "C" __global__ void k(float *x) { x[0] = not_declared_' .. nonce .. '; }'
    local opts = { arch = "sm_90", name = "fails.cu", defines = { KLOOP_SPEC_NONCE = nonce } }
    local job = assert(compile.prepare(src, opts))
    compile.run({ job }, { background = true })
    local t0 = sys.now()
    while not job.done and sys.now() - t0 < 60 do compile.pump(20) end
    assert.is_true(job.done)
    assert.is_false(job.ok)
    local again = compile.compile(src, opts)
    assert.are.equal(job, again, "the failed source was compiled again")
    assert.is_true(again.waited_background)
    assert.matches("not_declared_", again.log)
  end)
end)
