-- tests/spec/mcp_server_spec.lua: the MCP server's JSON-RPC layer (kloop.mcp.server):
-- framing, the handshake and version negotiation, errors -32700/-32600/-32601/-32602
-- naming the field, no batches, notifications never answered, a 10 MB line refused,
-- a tool that raises; after each the server keeps serving. The tools are a double.
local server = require("kloop.mcp.server")
local json = require("kloop.mcp.json")
local tools = require("kloop.mcp.tools")

local function fake_tools()
  local t = { definitions = tools.definitions, calls = {} }
  function t:set_client(info, protocol) self.client, self.protocol = info, protocol end
  function t:call(name, args)
    self.calls[#self.calls + 1] = name
    if name == "boom" then error("kaput") end
    if name == "check" and type(args and args.source) ~= "string" then
      return nil, "arguments.source: must be a string", "arguments.source"
    end
    return { structured = { verdict = "ok", n = #self.calls } }
  end
  return t
end

local function new()
  local out = {}
  local t = fake_tools()
  local s = server.new({ tools = t, version = "test", write = function(line)
    assert.is_nil(line:find("\n"), "one message per line")
    out[#out + 1] = assert(json.decode(line))
  end })
  return s, out, t
end

local INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",' ..
  '"capabilities":{},"clientInfo":{"name":"spec","version":"1.2"}}}'

local function ready()
  local s, out, t = new()
  s:handle_line(INIT)
  s:handle_line('{"jsonrpc":"2.0","method":"notifications/initialized"}')
  return s, out, t
end

describe("kloop.mcp.server", function()
  it("negotiates the version and passes the client's name to the tools", function()
    local s, out, t = ready()
    assert.equal(1, #out)
    assert.equal("2025-11-25", out[1].result.protocolVersion)
    assert.equal("kloop", out[1].result.serverInfo.name)
    assert.same({ listChanged = false }, out[1].result.capabilities.tools)
    assert.equal("spec", t.client.name)
    local s2, out2 = new()
    s2:handle_line(INIT:gsub("2025%-11%-25", "2025-06-18"))
    assert.equal("2025-06-18", out2[1].result.protocolVersion)
    local s3, out3 = new()
    s3:handle_line(INIT:gsub("2025%-11%-25", "1999-01-01"))
    assert.equal("2025-11-25", out3[1].result.protocolVersion)
    s:handle_line(INIT)
    assert.equal(-32600, out[2].error.code)
  end)

  it("refuses requests before initialize, but answers ping", function()
    local s, out = new()
    s:handle_line('{"jsonrpc":"2.0","id":"p","method":"ping"}')
    s:handle_line('{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
    assert.same({ jsonrpc = "2.0", id = "p", result = {} }, out[1])
    assert.equal(-32600, out[2].error.code)
    assert.equal(2, out[2].id)
  end)

  it("lists the tools with input and output schemas", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
    local names = {}
    for _, tl in ipairs(out[2].result.tools) do
      names[#names + 1] = tl.name
      assert.equal("object", tl.inputSchema.type)
      assert.equal("object", tl.outputSchema.type)
    end
    assert.same({ "task_info", "compile", "check", "profile", "compare", "history", "best", "promote" }, names)
  end)

  it("answers tools/call with content, structuredContent and isError", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check","arguments":{"source":"x"}}}')
    local r = out[2].result
    assert.is_false(r.isError)
    assert.equal("ok", r.structuredContent.verdict)
    assert.same(r.structuredContent, json.decode(r.content[1].text))
  end)

  it("names the bad field in -32602 errors", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"check","arguments":{"source":1}}}')
    s:handle_line('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}')
    s:handle_line('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"check","arguments":7}}')
    s:handle_line('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}')
    s:handle_line('{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}')
    for i, field in ipairs({ "params.arguments.source", "params.name", "params.arguments", "params" }) do
      assert.equal(-32602, out[i + 1].error.code)
      assert.equal(field, out[i + 1].error.data.field)
      assert.equal(i + 3, out[i + 1].id)
    end
    assert.equal(-32600, out[6].error.code) -- initialize again
  end)

  it("answers bad JSON, non-objects, batches and unknown methods, then keeps serving", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","id":9,')
    s:handle_line('"hello"')
    s:handle_line('[{"jsonrpc":"2.0","id":10,"method":"ping"}]')
    s:handle_line('{"jsonrpc":"1.0","id":11,"method":"ping"}')
    s:handle_line('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}')
    s:handle_line('{"jsonrpc":"2.0","id":12,"method":"server/discover"}')
    s:handle_line('{"jsonrpc":"2.0","id":13,"method":"ping"}')
    local codes = {}
    for i = 2, 7 do codes[#codes + 1] = out[i].error.code end
    assert.same({ -32700, -32600, -32600, -32600, -32600, -32601 }, codes)
    assert.equal(json.null, out[2].id)
    assert.equal(11, out[5].id)
    assert.equal(12, out[7].id)
    assert.same({ jsonrpc = "2.0", id = 13, result = {} }, out[8])
  end)

  it("never answers notifications, known or not, and ignores blank lines and responses", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}')
    s:handle_line('{"jsonrpc":"2.0","method":"no/such"}')
    s:handle_line('   ')
    s:handle_line('{"jsonrpc":"2.0","id":99,"result":{}}')
    assert.equal(1, #out)
  end)

  it("refuses a 10 MB line with an error and keeps serving", function()
    local s, out = ready()
    s:handle_line('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' .. string.rep("x", 10 * 1024 * 1024) .. '"}}')
    assert.equal(-32600, out[2].error.code)
    assert.truthy(out[2].error.message:find("too large"))
    s:handle_line('{"jsonrpc":"2.0","id":2,"method":"ping"}')
    assert.equal(2, out[3].id)
  end)

  it("turns a tool that raises into a tool error", function()
    local s, out, t = ready()
    t.definitions = tools.definitions
    s:handle_line('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"boom"}}')
    assert.is_true(out[2].result.isError)
    assert.truthy(out[2].result.content[1].text:find("kaput"))
  end)

  it("serves lines until the input ends", function()
    local s, out = new()
    local lines = { INIT, '{"jsonrpc":"2.0","id":2,"method":"ping"}' }
    local i = 0
    s:serve(function() i = i + 1 return lines[i] end)
    assert.equal(2, #out)
  end)
end)

describe("kloop.mcp.json", function()
  it("encodes NaN and infinities as null, bad UTF-8 as ?, and marked empty arrays as []", function()
    assert.equal('{"a":null,"b":null,"c":[],"d":{},"e":"a?b"}',
      json.encode({ a = 0 / 0, b = math.huge, c = json.array(), d = {}, e = "a\255b" }))
    assert.equal('[1,2.5,"x\\n"]', json.encode({ 1, 2.5, "x\n" }))
    assert.equal("é", json.valid_utf8("é"))
  end)
end)
