-- tests/spec/agent_spec.lua: the agent strategy (strategies/agent.lua) and what it stands
-- on: the conversations in the store, the MCP tools judged through a host, and whole
-- runs through the driver against tests/mock_llm scripted with tool calls (good calls,
-- arguments that are not JSON or break the schema, an unknown tool, a repeat, a reply
-- with none, a failed call, the budgets), on a host sgemm task (no GPU) whose baseline is
-- the slow i-j-k loop, so the i-k-j kernel the model checks is a clear new best.
local store = require("kloop.store.db")
local tools = require("kloop.mcp.tools")
local driver = require("kloop.search.driver")
local util = require("kloop.util")
local cjson = require("cjson")
local kloop = require("kloop")

local MOCK = dofile("tests/mock_llm/mock.lua")
local FAST = assert(util.read_file("examples/cpu/sgemm.c"))
local WRONG = assert(util.read_file("tests/strategies/ladder_wrong.c"))

local function tmpdb()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- tests/strategies/sgemm_naive.lua at a smaller bench size (the spec stays quick): the
-- i-j-k baseline, the reference of examples/cpu, in a folder of its own.
local TASK, finally_rm
do
  local dir = tmpdb()
  assert(os.execute("mkdir -p " .. util.shell_quote(dir)) == 0)
  local function put(name, text)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  put("ijk.c", assert(util.read_file("tests/strategies/ladder_ijk.c")))
  put("ref.c", assert(util.read_file("examples/cpu/sgemm_ref.c")))
  put("small.lua", (assert(util.read_file("tests/strategies/sgemm_naive.lua")):gsub('"ladder_ijk.c"', '"ijk.c"')
    :gsub('"../../examples/cpu/sgemm_ref.c"', '"ref.c"'):gsub("M = 256, N = 256, K = 256", "M = 128, N = 128, K = 128")))
  TASK = dir .. "/small.lua"
  finally_rm = dir
end

local function rm(p) for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(p .. s) end end

describe("kloop.store.conversations", function()
  local path = tmpdb()
  after_each(function() rm(path) end)

  it("keeps a conversation per lineage, rewritten per turn, scrubbed, with the candidates it produced", function()
    local db = assert(store.open(path))
    local run = assert(db:begin_run({ strategy_path = "agent.lua", strategy_text = "", task_name = "t" }))
    local id = assert(db:add_conversation(run, { lineage = 1, model = "m", messages = { { role = "user", content = "hi" } } }))
    local c1 = assert(db:add_candidate(run, { source = "a", proposer = "agent:m", conversation_id = id }))
    local c2 = assert(db:add_candidate(run, { source = "b", proposer = "agent:m" }))
    assert(db:set_candidate_conversation(c2, id))
    store.remember_secret("sk-agent-spec-SECRET-0123456789")
    assert(db:update_conversation(id, { turns = 2, tokens_in = 10, tokens_out = 5, stop_reason = "turns",
      messages = { { role = "user", content = "hi" }, { role = "assistant", content = "key sk-agent-spec-SECRET-0123456789" } } }))
    local c = assert(db:conversation(id))
    assert.equal(2, c.turns)
    assert.equal("turns", c.stop_reason)
    assert.same({ c1, c2 }, c.candidates)
    assert.equal(2, #c.messages)
    assert.is_nil(c.messages[2].content:find("SECRET", 1, true))
    assert.equal(1, #db:conversations(run))
    assert.equal(0, #db:conversations(run + 1))
    -- what cannot be: said, never raised
    local ok, err = db:add_conversation(run + 7, { lineage = 1 })
    assert.is_nil(ok)
    assert.matches("no run", err)
    ok, err = db:set_candidate_conversation(c1, id + 9)
    assert.is_nil(ok)
    assert.matches("no conversation", err)
    ok, err = db:add_candidate(run, { source = "c", proposer = "agent:m", conversation_id = id + 9 })
    assert.is_nil(ok)
    assert.matches("conversation", err)
    assert.has_error(function() db:update_conversation(id, { bogus = 1 }) end)
    db:close()
  end)
end)

describe("kloop.mcp.tools with a host", function()
  it("judges through the host, offers only the tools asked for, and writes nothing itself", function()
    local task = assert(kloop.load_task("examples/cpu/sgemm.c"))
    local judged = {}
    local rows = { { id = 4, name = "x.c", proposer = "agent:m", evaluation = { verdict = "ok", time_ms = 2 }, evaluations = { {} } } }
    local host = { run_id = 9,
      judge = function(c, tool)
        judged[#judged + 1] = { c = c, tool = tool }
        return { verdict = "ok", time_ms = 1.5, reason = "verified" }, 5
      end,
      lookup = function(id) if id == 4 then return { id = 4, source = "void sgemm(){}", name = "x.c" } end end,
      candidates = function() return rows end,
      best = function() return { id = 4, name = "x.c", evaluation = rows[1].evaluation, evaluations = {}, speedup = 2.5,
        source = "src" } end }
    local s = tools.new({ task = task, host = host, tools = { "check", "history", "best", "task_info" } })
    assert.equal(4, #s.definitions)
    local r, err, field = s:call("compare", { a = {}, b = {} })
    assert.is_nil(r)
    assert.equal("name", field, err)
    local res = assert(s:call("check", { source = "void sgemm(){}" }))
    assert.equal(5, res.structured.candidate_id)
    assert.equal("check", judged[1].tool)
    assert.equal("void sgemm(){}", judged[1].c.src)
    assert(s:call("check", { candidate_id = 4 }))
    assert.equal(4, judged[2].c.parent)
    r, err, field = s:call("check", { candidate_id = 5 })
    assert.is_nil(r)
    assert.equal("arguments.candidate_id", field, err)
    assert.equal(1, assert(s:call("history", {})).structured.total)
    local b = assert(s:call("best", { include_source = true })).structured
    assert.equal(2.5, b.speedup)
    assert.equal("src", b.source)
    assert.equal(9, assert(s:call("task_info", {})).structured.run_id)
  end)
end)

describe("the agent strategy against the mock", function()
  local mock, url, path
  local S = dofile("strategies/agent.lua")
  setup(function()
    mock = assert(MOCK.start())
    url = mock.openai_url
  end)
  teardown(function()
    if mock then mock:stop() end
    os.execute("rm -rf " .. util.shell_quote(finally_rm))
  end)
  before_each(function() mock:reset() path = tmpdb() end)
  after_each(function() rm(path) end)

  -- Runs the agent; returns the exit code, what it printed and the store.
  local function run(replies, extra, model_url)
    mock:script({ replies = replies, default = { text = "nothing more" }, reset = true })
    local args = { TASK, "--model", "mock-agent", "--llm-url", model_url or url, "--db", path, "--timing-budget", "0.05",
      "--seed", "3", "--no-cache", "--lineages", "1" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local out, print0 = {}, _G.print
    _G.print = function(...) out[#out + 1] = table.concat({ ... }, "\t") end
    local ok, rc = pcall(driver.run, S, "strategies/agent.lua", args)
    _G.print = print0
    assert(ok, rc)
    local db = assert(store.open(path, { readonly = true }))
    return rc, table.concat(out, "\n"), db, assert(db:query("SELECT max(id) AS id FROM runs"))[1].id
  end

  local function check(source, name) return { name = "check", arguments = { source = source, name = name } } end

  it("works through check calls, answers bad ones with errors, and stores the conversation with its candidates", function()
    local rc, out, db = run({
      { text = "First the facts.", tool_calls = { { name = "task_info" } } },
      { tool_calls = { check(FAST, "ikj") } },
      { tool_calls = { { name = "check", arguments = '{"source": "void sgemm(' }, { name = "check", arguments = { source = 42 } },
        { name = "no_such_tool", arguments = {} } } },
      { tool_calls = { check(FAST, "ikj"), check(WRONG) } },
      { text = "Done: the i-k-j kernel is the best I have." },
    })
    assert.equal(0, rc, out)
    assert.matches("conversation 1 %(lineage 1, mock%-agent%): 5 turns, tool calls: check 5, no_such_tool 1, task_info 1 "
      .. "%(3 refused: bad arguments%); 2 candidates, new best [%d.]+x; stop: final answer: no tool call", out)
    local conv = db:conversations(1)
    assert.equal(1, #conv)
    local c = conv[1]
    assert.equal(5, c.turns)
    assert.equal("final answer: no tool call", c.stop_reason)
    assert.equal("mock-agent", c.model)
    assert.is_true(c.tokens_in > 0 and c.tokens_out > 0)
    -- the repeat is the same candidate: two candidates, both pointing at the conversation
    local cands = db:candidates(1)
    assert.equal(3, #cands)
    assert.equal("baseline", cands[1].proposer)
    for i = 2, 3 do
      assert.equal("agent:mock-agent", cands[i].proposer)
      assert.equal(c.id, cands[i].conversation_id)
      assert.equal("agent", cands[i].prompt_id)
    end
    -- each from where its lineage stood: the baseline, then the lineage's best
    assert.same({ cands[1].id }, cands[2].parents)
    assert.same({ cands[2].id }, cands[3].parents)
    assert.same({ cands[2].id, cands[3].id }, c.candidates)
    assert.equal("ok", cands[2].evaluation.verdict)
    assert.equal("wrong", cands[3].evaluation.verdict)
    -- every model call is an llm_calls row; the ones that produced a candidate point at it
    local calls = db:llm_calls(1)
    assert.equal(5, #calls)
    local linked = 0
    for _, x in ipairs(calls) do if x.candidate_id then linked = linked + 1 end end
    assert.equal(2, linked)
    -- the messages: each call answered by a tool message with its id, the bad ones as errors
    local roles, errors = {}, 0
    for _, m in ipairs(c.messages) do
      roles[#roles + 1] = m.role
      if m.is_error then errors = errors + 1 end
    end
    assert.equal("system,user,assistant,tool,assistant,tool,assistant,tool,tool,tool,assistant,tool,tool,assistant",
      table.concat(roles, ","))
    assert.equal(3, errors)
    assert.matches("not valid JSON", c.messages[8].content)
    assert.matches("arguments.source", c.messages[9].content)
    assert.matches("unknown tool", c.messages[10].content)
    -- the repeat's result says it is the earlier candidate
    assert.equal(cands[2].id, cjson.decode(c.messages[12].content).candidate_id)
    -- and the model saw all of it: the fourth request carries the three error results
    local req = mock:stats().requests[4].body
    local tool_msgs = 0
    for _, m in ipairs(req.messages) do
      if m.role == "tool" then
        tool_msgs = tool_msgs + 1
        assert.matches("^call_%d+_%d+$", m.tool_call_id)
      end
    end
    assert.equal(5, tool_msgs)
    assert.equal(6, #req.tools)
    db:close()
  end)

  it("speaks Anthropic tool use the same way; bounds the calls of a reply and what is stored", function()
    local many = {}
    for i = 1, S.MAX_CALLS + 1 do many[i] = { name = "best", arguments = {} } end
    local rc, out, db = run({ { tool_calls = { check(FAST) } }, { tool_calls = many }, { text = "That is all." } },
      { "--model", "anthropic:mock-claude", "--result-bytes", "300" }, mock.anthropic_url)
    assert.equal(0, rc, out)
    local c = db:conversations(1)[1]
    assert.equal(3, c.turns)
    assert.equal("agent:mock-claude", db:candidates(1)[2].proposer)
    local req = mock:stats().requests[3]
    assert.equal("/v1/messages", req.path)
    local results = req.body.messages[#req.body.messages].content
    assert.equal(S.MAX_CALLS + 1, #results)
    for _, b in ipairs(results) do assert.equal("tool_result", b.type) end
    assert.is_nil(results[S.MAX_CALLS].is_error)
    assert.is_true(results[S.MAX_CALLS + 1].is_error)
    assert.matches("not run: at most 16 tool calls", results[S.MAX_CALLS + 1].content)
    assert.equal("tool_use", req.body.messages[#req.body.messages - 1].content[1].type)
    -- the stored conversation: every text cut to --result-bytes with a marker
    local src = c.messages[3].tool_calls[1].arguments.source
    assert.matches("^/%* examples/cpu/sgemm%.c", src)
    assert.matches("%[%.%.%. %d+ more bytes truncated by kloop%]$", src)
    assert.is_true(#src < 400)
    db:close()
  end)

  it("checks a kernel in a reply without a tool call, and ends the conversation there", function()
    local rc, out, db = run({ { text = "Here it is.\n\n```c\n" .. FAST .. "```\n" } })
    assert.equal(0, rc, out)
    local c = db:conversations(1)[1]
    assert.matches("^final answer: a kernel in the text %(candidate 2, ok%)", c.stop_reason)
    assert.equal(c.id, db:candidates(1)[2].conversation_id)
    db:close()
  end)

  it("keeps to the turns per lineage, starts the next lineage from the best, and to the run's budget", function()
    local replies = {}
    for _ = 1, 4 do replies[#replies + 1] = { tool_calls = { { name = "history", arguments = {} } } } end
    table.insert(replies, 2, { tool_calls = { check(FAST) } })
    local rc, out, db = run(replies, { "--lineages", "2", "--turns", "2" })
    assert.equal(0, rc, out)
    local conv = db:conversations(1)
    assert.equal(2, #conv)
    assert.equal("turns", conv[1].stop_reason)
    assert.equal("turns", conv[2].stop_reason)
    -- the second lineage starts from the first one's best (candidate 2)
    assert.matches("candidate 2: ok", conv[2].messages[2].content)
    db:close()
    -- --budget 1: the second check of a reply is not run, and the conversation says why
    local id
    rc, out, db, id = run({ { tool_calls = { check(FAST), check(WRONG) } } }, { "--budget", "1" })
    assert.equal(0, rc, out)
    local c = db:conversations(id)[1]
    assert.equal("budget: candidates", c.stop_reason)
    assert.matches("not run: the run's budget", c.messages[#c.messages].content)
    assert.equal(2, #db:candidates(id))
    db:close()
  end)

  it("stops a lineage whose model call fails, and the run fails when no proposal could be had", function()
    local rc, out, db = run({ { status = 400 } })
    assert.equal(1, rc, out)
    local c = db:conversations(1)[1]
    assert.matches("^the model call failed: HTTP 400", c.stop_reason)
    assert.equal("failed", db:run(1).status)
    db:close()
    -- a refused key ends the run at once, the conversation closed with the reason
    local id
    rc, out, db, id = run({ { auth = true } }, { "--lineages", "3" })
    assert.equal(1, rc, out)
    assert.equal(1, #db:conversations(id))
    assert.matches("refused", db:run(id).stop_reason)
    db:close()
  end)
end)
