-- tests/spec/mcp_tools_spec.lua: the MCP tools without a transport (kloop.mcp.tools):
-- argument checks naming the field, bounded texts, and every judged candidate recorded
-- with proposer agent:<client> and the client's version. The evaluator is a double.
local tools = require("kloop.mcp.tools")
local store = require("kloop.store.db")
local kloop = require("kloop")

local function fake_ev()
  local ev = { n = 0 }
  function ev:evaluate(src)
    self.n = self.n + 1
    if src:find("cheat") then return { verdict = "wrong", reason = string.rep("r", 20000), evidence = { index = 3 } } end
    return { verdict = "ok", reason = "verified", time_ms = 2.0, ci_ms = { 1.9, 2.1 }, reps = 10 }
  end
  function ev:close() self.closed = true end
  return ev
end

describe("kloop.mcp.tools", function()
  local path = os.tmpname()
  after_each(function() os.remove(path) os.remove(path .. "-wal") os.remove(path .. "-shm") end)

  local function session()
    os.remove(path)
    local db = assert(store.open(path))
    local task = assert(kloop.load_task("examples/cpu/sgemm.c"))
    local s = tools.new({ task = task, db = db, evaluator = fake_ev(), run_name = "spec" })
    s:set_client({ name = "spec agent", version = "3.1" }, "2025-11-25")
    return s, db
  end

  it("refuses bad arguments naming the field", function()
    local s = session()
    local cases = {
      { "check", { source = 1 }, "arguments.source" },
      { "check", { source = "x", candidate_id = 1 }, "arguments.candidate_id" },
      { "check", { defines = { ["a-b"] = 1 } }, "arguments.defines.a-b" },
      { "check", { defines = { A = {} } }, "arguments.defines.A" },
      { "check", { budget_s = 1000 }, "arguments.budget_s" },
      { "compare", { a = {} }, "arguments.b" },
      { "compare", { a = { source = 2 }, b = {} }, "arguments.a.source" },
      { "history", { limit = 1.5 }, "arguments.limit" },
      { "promote", {}, "arguments.candidate_id" },
      { "check", { candidate_id = 12345 }, "arguments.candidate_id" },
      { "nope", {}, "name" },
    }
    for _, c in ipairs(cases) do
      local r, err, field = s:call(c[1], c[2])
      assert.is_nil(r, c[1])
      assert.equal(c[3], field, err)
      assert.truthy(err:find(c[3] == "name" and "unknown tool" or c[3], 1, true), err)
    end
  end)

  it("records candidates with the agent's provenance, once per source, and bounds texts", function()
    local s, db = session()
    local base = assert(s:call("check", {})).structured
    local a = assert(s:call("check", { source = "void sgemm(){}", name = "mine" })).structured
    local again = assert(s:call("check", { source = "void sgemm(){}" })).structured
    local cheat = assert(s:call("check", { source = "/* cheat */" })).structured
    assert.equal("ok", a.verdict)
    assert.equal(a.candidate_id, again.candidate_id)
    assert.equal("wrong", cheat.verdict)
    assert.truthy(#cheat.reason < 8300 and cheat.reason:find("truncated by kloop mcp", 1, true))
    local rows = db:query("SELECT proposer, model, note FROM candidates ORDER BY id")
    assert.equal(3, #rows)
    assert.equal("baseline", rows[1].proposer)
    assert.equal("agent:spec_agent", rows[2].proposer)
    assert.equal("spec_agent 3.1", rows[2].model)
    assert.truthy(rows[2].note:find('"client_version":"3.1"', 1, true))
    local h = assert(s:call("history", { limit = 2 })).structured
    assert.equal(3, h.total)
    assert.is_true(h.truncated)
    assert.equal(2, #h.candidates)
    local b = assert(s:call("best", {})).structured
    assert.is_true(b.found)
    assert.equal(base.candidate_id, b.candidate_id)
    -- promote of a candidate outside this session's run is a tool error (the real
    -- promotion is driven by tests/mcp/client_test.py over a host task)
    local p = assert(s:call("promote", { candidate_id = 999999 }))
    assert.is_true(p.is_error)
    assert.truthy(p.text:find("not a candidate of this session's run", 1, true))
    local pr = assert(s:call("profile", {}))
    assert.is_true(pr.is_error)
    s:close()
    assert.equal("done", db:query("SELECT status FROM runs")[1].status)
    db:close()
  end)
end)
