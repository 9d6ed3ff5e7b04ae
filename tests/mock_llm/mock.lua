-- tests/mock_llm/mock.lua: starts tests/mock_llm/server.py on 127.0.0.1 (free port) for a spec and talks to its control endpoints.
--
-- local mock = dofile("tests/mock_llm/mock.lua").start()   -- nil, why when python3 is missing
-- mock:script{replies = {...}, default = {...}, reset = true}; mock:stats().count; mock:stop()
-- The server exits by itself when this process ends (it watches our pid) or after
-- max_seconds, so a failing spec never leaves it running.
local core = require("kloop.core.ffi")
local cjson = require("cjson")
local util = require("kloop.util")
local ffi = core.ffi
local C = core.C

local M = {}
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "tests/mock_llm"

local Mock = {}
Mock.__index = Mock

-- A blocking request over kl_http (control calls only).
local function http(method_body, url, timeout_ms)
  local p = ffi.new("kl_http*[1]")
  local err = ffi.new("kl_err")
  if C.kl_http_new(p, err) ~= 0 then return nil, ffi.string(err.msg) end
  local client = p[0]
  local hdr = ffi.new("const char*[1]", { "Content-Type: application/json" })
  local id = ffi.new("int64_t[1]")
  local body = method_body or "{}"
  if C.kl_http_post(client, url, hdr, 1, body, #body, timeout_ms or 5000, id, err) ~= 0 then
    C.kl_http_free(client)
    return nil, ffi.string(err.msg)
  end
  local res = ffi.new("kl_http_result")
  local done = ffi.new("int[1]")
  local t_end = C.kl_now() + (timeout_ms or 5000) / 1000 + 1
  while done[0] == 0 and C.kl_now() < t_end do C.kl_http_poll(client, 100, res, done, err) end
  local out, why
  if done[0] == 1 and res.curl_code == 0 then out = ffi.string(res.body, res.body_len) else why = ffi.string(res.error) end
  C.kl_http_result_free(res)
  C.kl_http_free(client)
  return out, why
end

function M.start(opts)
  opts = opts or {}
  if not util.capture("command -v python3") or util.capture("command -v python3") == "" then
    return nil, "python3 not found"
  end
  local port_file = os.tmpname()
  os.remove(port_file)
  local cmd = string.format("python3 %s/server.py --port-file %s --parent-pid %d --max-seconds %d </dev/null >/dev/null 2>&1 &",
    util.shell_quote(here), util.shell_quote(port_file), C.kl_getpid(), opts.max_seconds or 300)
  -- env -i: the server never sees the test's environment (keys planted there included)
  os.execute("env -i PATH=/usr/bin:/bin " .. cmd)
  local t_end = C.kl_now() + 10
  local port
  local p = ffi.new("kl_http*[1]")
  local err = ffi.new("kl_err")
  assert(C.kl_http_new(p, err) == 0, "kl_http_new")
  local res, done = ffi.new("kl_http_result"), ffi.new("int[1]")
  while C.kl_now() < t_end do
    local s = util.read_file(port_file)
    if s and tonumber(s) then port = tonumber(s) break end
    C.kl_http_poll(p[0], 20, res, done, err) -- nothing pending: a 20 ms sleep
  end
  C.kl_http_free(p[0])
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
  -- kl_http only POSTs: the server answers stats on POST too
  return self:control("/control/stats", {})
end

function Mock:stop()
  pcall(http, "{}", self.base .. "/control/shutdown", 2000)
end

return M
