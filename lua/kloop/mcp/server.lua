-- kloop.mcp.server: the Model Context Protocol over stdio: newline-delimited JSON-RPC
-- 2.0 messages, the initialize handshake with version negotiation, ping, tools/list and
-- tools/call over a kloop.mcp.tools session. Every malformed or refused message gets
-- its JSON-RPC error and the server keeps serving; only protocol messages are written.
local json = require("kloop.mcp.json")
local sys = require("kloop.core.sys")

local M = {}

-- The revisions this server speaks, newest first; the first is the one it offers.
M.PROTOCOL_VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }

-- A line longer than this is refused unparsed (a candidate source is at most 256 KiB).
M.MAX_LINE = 4 * 1024 * 1024
-- A response longer than this is replaced by a tool error saying so.
M.MAX_RESPONSE = 2 * 1024 * 1024

M.PARSE_ERROR, M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INVALID_PARAMS, M.INTERNAL_ERROR =
  -32700, -32600, -32601, -32602, -32603

local Server = {}
Server.__index = Server

-- opts: tools (a kloop.mcp.tools session), write (function(line): one message, no
-- newline), log (function(msg): diagnostics, never on the protocol stream), version
-- (kloop's), instructions (text for the client).
function M.new(opts)
  return setmetatable({ tools = opts.tools, write = opts.write, log = opts.log or function() end,
    version = opts.version or "0", instructions = opts.instructions, state = "new" }, Server)
end

function Server:send(msg)
  msg.jsonrpc = "2.0"
  self.write(json.encode(msg))
end

function Server:error(id, code, message, data)
  self:send({ id = id == nil and json.null or id, error = { code = code, message = message, data = data } })
end

local function valid_id(id)
  return type(id) == "string" or (type(id) == "number" and id % 1 == 0)
end

-- The initialize request: agree on a version (the client's when this server speaks it,
-- else this server's newest, which the client may refuse) and pass the client's name
-- and version to the tools as provenance.
function Server:initialize(id, params)
  if self.state ~= "new" then return self:error(id, M.INVALID_REQUEST, "already initialized") end
  local asked = params.protocolVersion
  if type(asked) ~= "string" then
    return self:error(id, M.INVALID_PARAMS, "params.protocolVersion: must be a string", { field = "params.protocolVersion" })
  end
  local info = params.clientInfo
  if info ~= nil and type(info) ~= "table" then
    return self:error(id, M.INVALID_PARAMS, "params.clientInfo: must be an object", { field = "params.clientInfo" })
  end
  local version = M.PROTOCOL_VERSIONS[1]
  for _, v in ipairs(M.PROTOCOL_VERSIONS) do if v == asked then version = v end end
  self.protocol = version
  self.tools:set_client(info, version)
  self.state = "ready"
  self:send({ id = id, result = {
    protocolVersion = version,
    capabilities = { tools = { listChanged = false } },
    serverInfo = { name = "kloop", title = "kloop: a verifier and run store for GPU kernels", version = self.version },
    instructions = self.instructions,
  } })
end

function Server:tools_list(id)
  local list = json.array()
  for _, t in ipairs(self.tools.definitions) do
    list[#list + 1] = { name = t.name, title = t.title, description = t.description, inputSchema = t.inputSchema,
      outputSchema = t.outputSchema, annotations = t.annotations }
  end
  self:send({ id = id, result = { tools = list } })
end

-- A tool result in the protocol's shape: content (the JSON as text too, for clients
-- that do not read structuredContent), structuredContent, isError.
local function call_result(r)
  if r.is_error then
    return { content = json.array({ { type = "text", text = r.text } }), isError = true }
  end
  return { content = json.array({ { type = "text", text = json.encode(r.structured) } }),
    structuredContent = r.structured, isError = false }
end

function Server:tools_call(id, params)
  if type(params.name) ~= "string" then
    return self:error(id, M.INVALID_PARAMS, "params.name: must be a string (the tool's name)", { field = "params.name" })
  end
  local args = params.arguments
  if args ~= nil and args ~= json.null and type(args) ~= "table" then
    return self:error(id, M.INVALID_PARAMS, "params.arguments: must be an object", { field = "params.arguments" })
  end
  -- A tool that raises is a bug of kloop's: the client gets a tool error and the
  -- server keeps serving. Ctrl-C and SIGTERM pass through (the caller stops serving).
  local ok, r, err, field = xpcall(self.tools.call, debug.traceback, self.tools, params.name, args)
  if not ok then
    if sys.is_interrupt(r) then error(r, 0) end
    self.log("kloop mcp: tool " .. params.name .. " failed: " .. tostring(r))
    r = { is_error = true, text = "internal error in kloop's " .. params.name .. " tool: " ..
      tostring(r):match("^[^\n]*") }
  elseif not r then
    local f = field and (field == "name" and "params.name" or field:gsub("^arguments", "params.arguments")) or nil
    return self:error(id, M.INVALID_PARAMS, err, f and { field = f } or nil)
  end
  local result = call_result(r)
  local line = json.encode({ jsonrpc = "2.0", id = id, result = result })
  if #line > M.MAX_RESPONSE then
    result = call_result({ is_error = true, text = string.format("the %s result is too large (%d bytes; at most %d)",
      params.name, #line, M.MAX_RESPONSE) })
  end
  self:send({ id = id, result = result })
end

-- One message (a decoded table): answers requests, acts on notifications.
function Server:dispatch(msg)
  local id, method = msg.id, msg.method
  if msg.jsonrpc ~= "2.0" then
    return self:error(valid_id(id) and id or nil, M.INVALID_REQUEST, "jsonrpc: must be \"2.0\"", { field = "jsonrpc" })
  end
  if method == nil and (msg.result ~= nil or msg.error ~= nil) then return end -- a response: we send no requests
  if type(method) ~= "string" then
    return self:error(valid_id(id) and id or nil, M.INVALID_REQUEST, "method: must be a string", { field = "method" })
  end
  local params = msg.params
  if params == json.null then params = nil end
  if params ~= nil and type(params) ~= "table" then
    if id == nil then return end
    return self:error(id, M.INVALID_PARAMS, "params: must be an object", { field = "params" })
  end
  params = params or {}
  if id == nil then -- a notification: never answered
    if method == "notifications/initialized" then self.initialized = true end
    -- notifications/cancelled: calls are answered in order, so the request it names has
    -- been answered already (the protocol lets a late cancellation be ignored)
    return
  end
  if not valid_id(id) then
    return self:error(nil, M.INVALID_REQUEST, "id: must be a string or an integer", { field = "id" })
  end
  if method == "ping" then return self:send({ id = id, result = {} }) end
  if method == "initialize" then return self:initialize(id, params) end
  if self.state ~= "ready" then
    return self:error(id, M.INVALID_REQUEST, "not initialized: send initialize first")
  end
  if method == "tools/list" then return self:tools_list(id) end
  if method == "tools/call" then return self:tools_call(id, params) end
  return self:error(id, M.METHOD_NOT_FOUND, "method not found: " .. method)
end

-- One line from the client (without its newline).
function Server:handle_line(line)
  if line:find("^%s*$") then return end
  if #line > M.MAX_LINE then
    return self:error(nil, M.INVALID_REQUEST, string.format("message too large (%d bytes; at most %d)", #line, M.MAX_LINE))
  end
  local msg, err = json.decode(line)
  if msg == nil then return self:error(nil, M.PARSE_ERROR, "parse error: " .. tostring(err)) end
  if type(msg) ~= "table" or next(msg) == nil then
    return self:error(nil, M.INVALID_REQUEST, "a message must be a JSON object")
  end
  if #msg > 0 then
    return self:error(nil, M.INVALID_REQUEST, "batches are not supported (MCP 2025-06-18 and later send one message per line)")
  end
  -- a bug of kloop's in answering: an internal error for this request, and on we go
  local ok, e = xpcall(self.dispatch, debug.traceback, self, msg)
  if not ok then
    if sys.is_interrupt(e) then error(e, 0) end
    self.log("kloop mcp: " .. tostring(e))
    if msg.id ~= nil and valid_id(msg.id) then
      self:error(msg.id, M.INTERNAL_ERROR, "internal error: " .. tostring(e):match("^[^\n]*"))
    end
  end
end

-- Serves until read() returns nil (end of input). read: function() -> line or nil.
function Server:serve(read)
  while true do
    local line = read()
    if line == nil then return end
    self:handle_line(line)
  end
end

return M
