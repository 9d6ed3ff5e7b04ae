-- tests/spec/llm_tools_spec.lua: tool calls in both wire formats (kloop.llm.wire, the
-- session, the cache): tool definitions and tool results in requests, tool calls in
-- replies, arguments that are not JSON or not an object, ids a server left out; then
-- against tests/mock_llm scripted with tool calls. (The cases of llm_spec.lua's file,
-- kept apart: that file is at the 600-line limit.)
local wire = require("kloop.llm.wire")
local llm = require("kloop.llm.session")
local cjson = require("cjson")

local MOCK = dofile("tests/mock_llm/mock.lua")

local OAI = { api = "openai", model = "gpt-4o", unsupported = {}, max_tokens = 8192 }
local ANT = { api = "anthropic", model = "claude-sonnet-4-5", unsupported = {}, max_tokens = 8192 }
local TOOLS = { { name = "check", description = "verify and time", parameters = { type = "object",
  properties = { source = { type = "string" } }, required = { "source" } } } }

-- A conversation with a turn of two tool calls (one with arguments that were not JSON),
-- their results, and a user note after them.
local function conversation()
  return {
    { role = "system", content = "be brief" },
    { role = "user", content = "make it fast" },
    { role = "assistant", content = "", tool_calls = {
      { id = "c1", name = "check", arguments = { source = "void f(){}" }, raw = '{"source": "void f(){}"}' },
      { id = "c2", name = "check", error = "the arguments are not valid JSON", raw = "{bad" } } },
    { role = "tool", tool_call_id = "c1", content = '{"verdict":"ok"}' },
    { role = "tool", tool_call_id = "c2", content = "bad arguments", is_error = true },
    { role = "user", content = "2 turns left" },
  }
end

describe("kloop.llm.wire tool calls", function()
  it("sends OpenAI tools as functions, calls with their arguments as text, results as role tool", function()
    local body = cjson.decode((wire.build(OAI, conversation(), { tools = TOOLS })))
    assert.same({ type = "function", ["function"] = { name = "check", description = "verify and time",
      parameters = TOOLS[1].parameters } }, body.tools[1])
    local a = body.messages[3]
    assert.equal("assistant", a.role)
    assert.equal(cjson.null, a.content)
    assert.same({ id = "c1", type = "function", ["function"] = { name = "check", arguments = '{"source": "void f(){}"}' } },
      a.tool_calls[1])
    -- what the model sent comes back as it was, even when it was not JSON
    assert.equal("{bad", a.tool_calls[2]["function"].arguments)
    assert.same({ role = "tool", tool_call_id = "c1", content = '{"verdict":"ok"}' }, body.messages[4])
    assert.equal("tool", body.messages[5].role)
    assert.same({ role = "user", content = "2 turns left" }, body.messages[6])
    assert.equal(6, #body.messages)
  end)

  it("sends Anthropic tools with input_schema, calls as tool_use, results in one user message", function()
    local body = cjson.decode((wire.build(ANT, conversation(), { tools = TOOLS })))
    assert.same({ name = "check", description = "verify and time", input_schema = TOOLS[1].parameters }, body.tools[1])
    assert.equal("be brief", body.system)
    assert.equal(3, #body.messages) -- user, assistant, user (the roles alternate)
    local a = body.messages[2]
    assert.equal("assistant", a.role)
    assert.same({ type = "tool_use", id = "c1", name = "check", input = { source = "void f(){}" } }, a.content[1])
    assert.same({ type = "tool_use", id = "c2", name = "check", input = {} }, a.content[2])
    local u = body.messages[3]
    assert.equal("user", u.role)
    assert.same({ type = "tool_result", tool_use_id = "c1", content = '{"verdict":"ok"}' }, u.content[1])
    assert.same({ type = "tool_result", tool_use_id = "c2", content = "bad arguments", is_error = true }, u.content[2])
    assert.same({ type = "text", text = "2 turns left" }, u.content[3])
  end)

  it("leaves a conversation without tools byte for byte as before", function()
    local msgs = { { role = "system", content = "s" }, { role = "user", content = "u" } }
    local body = cjson.decode((wire.build(ANT, msgs, {})))
    assert.same({ { role = "user", content = "u" } }, body.messages)
    assert.is_nil(body.tools)
    body = cjson.decode((wire.build(OAI, msgs, { tools = {} })))
    assert.is_nil(body.tools)
    assert.same({ role = "user", content = "u" }, body.messages[2])
  end)

  it("makes tools part of the request key", function()
    local m = { { role = "user", content = "u" } }
    assert.are_not.equal(wire.request_key(OAI, m, {}), wire.request_key(OAI, m, { tools = TOOLS }))
  end)

  it("reads OpenAI tool calls: JSON text, text that is not JSON, an array, an object, no id", function()
    local raw = cjson.encode({ model = "gpt-4o", usage = { prompt_tokens = 3, completion_tokens = 4 },
      choices = { { finish_reason = "tool_calls", message = { role = "assistant", content = cjson.null, tool_calls = {
        { id = "a", type = "function", ["function"] = { name = "check", arguments = '{"source":"x"}' } },
        { id = "b", type = "function", ["function"] = { name = "check", arguments = '{"source": "x' } },
        { id = "c", type = "function", ["function"] = { name = "check", arguments = "[1, 2]" } },
        { type = "function", ["function"] = { name = "best", arguments = { include_source = true } } },
        { id = "e", type = "function", ["function"] = { name = "task_info", arguments = "" } } } } } } })
    local r = assert(wire.parse(OAI, raw))
    assert.equal("", r.text)
    local c = r.tool_calls
    assert.equal(5, #c)
    assert.same({ id = "a", name = "check", arguments = { source = "x" }, raw = '{"source":"x"}' }, c[1])
    assert.is_nil(c[2].arguments)
    assert.matches("not valid JSON", c[2].error)
    assert.matches("not a JSON object", c[3].error)
    assert.same({ include_source = true }, c[4].arguments)
    assert.equal("call_4", c[4].id) -- made up where the server sent none
    assert.same({}, c[5].arguments)
    assert.is_false(r.truncated)
  end)

  it("reads Anthropic tool_use blocks, and text beside them", function()
    local raw = cjson.encode({ model = "claude", stop_reason = "tool_use", usage = { input_tokens = 1, output_tokens = 2 },
      content = { { type = "text", text = "Checking." }, { type = "tool_use", id = "tu1", name = "check", input = { source = "y" } },
        { type = "tool_use", id = "tu2", name = "check", input = "not an object" } } })
    local r = assert(wire.parse(ANT, raw))
    assert.equal("Checking.", r.text)
    assert.same({ id = "tu1", name = "check", arguments = { source = "y" } }, r.tool_calls[1])
    assert.matches("not a JSON object", r.tool_calls[2].error)
  end)

  it("still refuses a reply with neither text nor a tool call", function()
    local raw = cjson.encode({ choices = { { finish_reason = "stop", message = { role = "assistant", content = cjson.null } } } })
    local r, why, kind = wire.parse(OAI, raw)
    assert.is_nil(r)
    assert.matches("no text", why)
    assert.equal("empty", kind)
  end)
end)

describe("kloop.llm tool calls against the mock server", function()
  local mock, oai, anth
  setup(function()
    mock = assert(MOCK.start())
    oai = assert(llm.config({ env = {}, model = "mock-tools", llm_url = mock.openai_url, max_retries = 0 }))[1]
    anth = assert(llm.config({ env = {}, model = "anthropic:mock-claude", llm_url = mock.anthropic_url, max_retries = 0 }))[1]
  end)
  teardown(function() if mock then mock:stop() end end)
  before_each(function() mock:reset() end)

  local STEP = { tool_calls = { { name = "check", arguments = { source = "void sgemm() {}" } },
    { name = "check", arguments = "{not json" } } }

  for _, api in ipairs({ "openai", "anthropic" }) do
    it("offers tools and gets the calls back, the same through the cache (" .. api .. ")", function()
      local ep = api == "openai" and oai or anth
      mock:script({ replies = { STEP } })
      local s = llm.session({ cache = llm.memory_cache() })
      local msgs = { { role = "user", content = "go" } }
      local h = s:complete(ep, msgs, { tools = TOOLS })
      assert.is_true(h.ok, h.reason)
      assert.equal(2, #h.tool_calls)
      assert.equal("check", h.tool_calls[1].name)
      assert.same({ source = "void sgemm() {}" }, h.tool_calls[1].arguments)
      if api == "openai" then
        assert.matches("not valid JSON", h.tool_calls[2].error)
      else
        -- (the mock sends Anthropic a string input as is: not an object)
        assert.matches("not a JSON object", h.tool_calls[2].error)
      end
      local body = mock:stats().requests[1].body
      assert.equal("check", api == "openai" and body.tools[1]["function"].name or body.tools[1].name)
      -- a repeat is answered from the cache, its calls included
      local h2 = s:complete(ep, msgs, { tools = TOOLS })
      assert.is_true(h2.cached)
      assert.same(h.tool_calls[1], h2.tool_calls[1])
      assert.equal(1, mock:stats().count)
    end)
  end
end)
