-- tests/mock_llm/mock.lua: starts tests/mock_llm/server.py on 127.0.0.1 (free port) for a spec and talks to its control endpoints.
--
-- local mock = dofile("tests/mock_llm/mock.lua").start()   -- nil, why when python3 is missing
-- mock:script{replies = {...}, default = {...}, reset = true}; mock:stats().count; mock:stop()
-- The server exits by itself when this process ends (it watches our pid) or after
-- max_seconds, so a failing spec never leaves it running.
local cjson = require("cjson")
local util = require("kloop.util")
local http_client = require("kloop.core.http")
local sys = require("kloop.core.sys")

local M = {}
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "tests/mock_llm"

local Mock = {}
Mock.__index = Mock

-- A blocking request over kloop.core.http (control calls only).
local function http(method_body, url, timeout_ms)
  local res, err = http_client.post_wait(url, { "Content-Type: application/json" }, method_body or "{}", timeout_ms or 5000)
  if not res then return nil, err end
  if res.curl_code ~= 0 then return nil, res.error end
  return res.body
end

function M.start(opts)
  opts = opts or {}
  if not util.capture("command -v python3") or util.capture("command -v python3") == "" then
    return nil, "python3 not found"
  end
  local port_file = os.tmpname()
  os.remove(port_file)
  local cmd = string.format("python3 %s/server.py --port-file %s --parent-pid %d --max-seconds %d </dev/null >/dev/null 2>&1 &",
    util.shell_quote(here), util.shell_quote(port_file), sys.getpid(), opts.max_seconds or 300)
  -- env -i: the server never sees the test's environment (keys planted there included)
  os.execute("env -i PATH=/usr/bin:/bin " .. cmd)
  local t_end = sys.now() + 10
  local port
  local client = assert(http_client.new())
  while sys.now() < t_end do
    local s = util.read_file(port_file)
    if s and tonumber(s) then port = tonumber(s) break end
    client:poll(20) -- nothing pending: a 20 ms sleep
  end
  client:close()
  os.remove(port_file)
  if not port then return nil, "mock server did not start within 10 s" end
  local self = setmetatable({ port = port, base = "http://127.0.0.1:" .. port }, Mock)
  self.openai_url = self.base .. "/v1"
  self.anthropic_url = self.base
  return self
end

function Mock:control(path, obj)
  local out, why = http(cjson.encode(obj or {}), self.base .. path)
  if not out then error("mock control " .. path .. ": " .. tostring(why)) end
  return cjson.decode(out)
end

function Mock:script(t) return self:control("/control/script", t) end
function Mock:reset() return self:control("/control/reset", {}) end

function Mock:stats()
  -- the client only POSTs: the server answers stats on POST too
  return self:control("/control/stats", {})
end

function Mock:stop()
  pcall(http, "{}", self.base .. "/control/shutdown", 2000)
end

return M
