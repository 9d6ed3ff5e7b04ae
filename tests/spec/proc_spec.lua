-- tests/spec/proc_spec.lua: kloop.core.proc: framed messages with a worker, and the
-- finalizer that kills and reaps a child whose Proc was dropped without close.
local proc = require("kloop.core.proc")
local sys = require("kloop.core.sys")

-- True while a process with this pid exists (a zombie counts: not reaped yet).
local function alive(pid)
  return os.execute(string.format("kill -0 %d 2>/dev/null", pid)) == 0
end

describe("kloop.core.proc", function()
  local exe = assert(sys.exe_path())

  it("talks to a worker over fds 3/4 and closes it", function()
    local p = assert(proc.spawn({ exe, "--worker", "host" }))
    assert.is_true(p.pid > 0)
    assert(p:send('{"op":"quit"}'))
    local reply = assert(p:recv(20))
    assert.matches('"ok":true', reply, 1, true)
    assert.is_true(p:close(2000))
    assert.is_true(p:exited())
    assert.are.equal(0, p:exit_status())
  end)

  it("kills and reaps a worker whose Proc is collected without close", function()
    -- an evaluator dropped on the floor in a REPL: its worker waits for requests forever
    local p = assert(proc.spawn({ exe, "--worker", "host" }))
    local pid = p.pid
    assert.is_true(alive(pid))
    p = nil -- luacheck: ignore (the last reference dropped, so the GC collects the Proc)
    collectgarbage()
    collectgarbage()
    local gone = not alive(pid)
    if not gone then os.execute(string.format("kill -9 %d 2>/dev/null", pid)) end
    assert.is_true(gone, "worker " .. pid .. " outlived its collected Proc")
  end)
end)
