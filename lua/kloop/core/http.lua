-- kloop.core.http: the wrapper of the core's HTTP client (kl_http_*: POSTs over libcurl's
-- multi interface, many in flight, pulled with poll): the only Lua code that calls them.
--
-- A Client owns one kl_http; a finalizer frees it (cancelling what is in flight) when the
-- Client is collected without close(). poll() copies each finished request into a plain
-- Lua table and frees the C result at once, so no C memory outlives the call. A failed
-- transfer is a result (curl_code ~= 0, error set), never an error of this module.
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C
local sys = require("kloop.core.sys")

local M = {}

local Client = {}
Client.__index = Client

-- A new client: Client, or nil, msg.
function M.new()
  local p = ffi.new("kl_http*[1]")
  local err = ffi.new("kl_err")
  if C.kl_http_new(p, err) ~= 0 then return nil, ffi.string(err.msg) end
  return setmetatable({ raw = ffi.gc(p[0], C.kl_http_free) }, Client)
end

-- Starts one POST: its id (a number), or nil, msg (a bad URL, out of memory).
-- headers: a list of "Name: value" strings (copied). limits: a number of milliseconds
-- (one limit for the whole transfer, <= 0: none), or a table {connect_ms, first_byte_ms,
-- idle_ms, total_ms, max_body} (a field 0 or absent: no limit; max_body 0: 64 MB).
function Client:post(url, headers, body, limits)
  assert(self.raw, "kloop.core.http: client closed")
  headers = headers or {}
  local hdr = ffi.new("const char*[?]", math.max(1, #headers))
  for i, s in ipairs(headers) do hdr[i - 1] = s end
  local id = ffi.new("int64_t[1]")
  local err = ffi.new("kl_err")
  local st
  if type(limits) == "table" then
    local lim = ffi.new("kl_http_limits")
    lim.connect_ms = limits.connect_ms or 0
    lim.first_byte_ms = limits.first_byte_ms or 0
    lim.idle_ms = limits.idle_ms or 0
    lim.total_ms = limits.total_ms or 0
    lim.max_body = limits.max_body or 0
    st = C.kl_http_post_ex(self.raw, url, hdr, #headers, body, #body, lim, id, err)
  else
    st = C.kl_http_post(self.raw, url, hdr, #headers, body, #body, limits or 0, id, err)
  end
  -- the header strings are copied by the core: hdr (and headers) may go now
  if st ~= 0 then return nil, ffi.string(err.msg), st end
  return tonumber(id[0])
end

-- Drives the transfers for up to wait_ms (with nothing pending: a plain wait). Returns
-- one finished request as {id, status, curl_code, body, total_s, retry_after_ms,
-- request_id, error, too_big (bool), timed_out (a kl_http_timeout_kind)}, or false when
-- none finished in time, or nil, msg when the client itself failed (misuse, no memory).
function Client:poll(wait_ms)
  assert(self.raw, "kloop.core.http: client closed")
  local res = ffi.new("kl_http_result")
  local done = ffi.new("int[1]")
  local err = ffi.new("kl_err")
  if C.kl_http_poll(self.raw, wait_ms or 0, res, done, err) ~= 0 then return nil, ffi.string(err.msg) end
  if done[0] ~= 1 then return false end
  local out = {
    id = tonumber(res.id), status = res.status, curl_code = res.curl_code,
    body = res.body ~= nil and ffi.string(res.body, res.body_len) or "",
    total_s = res.total_s, retry_after_ms = res.retry_after_ms,
    request_id = ffi.string(res.request_id), error = ffi.string(res.error),
    too_big = res.too_big ~= 0, timed_out = res.timed_out,
  }
  C.kl_http_result_free(res)
  return out
end

-- Cancels a request not yet returned by poll: true, or false when it is not pending.
function Client:cancel(id)
  return self.raw ~= nil and C.kl_http_cancel(self.raw, id) == 0
end

-- Requests not yet returned by poll.
function Client:pending()
  return self.raw and C.kl_http_pending(self.raw) or 0
end

-- Frees the client now (what is in flight is cancelled); a second close does nothing.
function Client:close()
  if self.raw then
    local raw = self.raw
    self.raw = nil
    ffi.gc(raw, nil)
    C.kl_http_free(raw)
  end
end

-- A blocking POST (control calls, tests): the result table as poll gives it, or nil, msg.
function M.post_wait(url, headers, body, timeout_ms)
  local c, err = M.new()
  if not c then return nil, err end
  local id, perr = c:post(url, headers, body, timeout_ms or 5000)
  if not id then c:close() return nil, perr end
  local t_end = sys.now() + (timeout_ms or 5000) / 1000 + 1
  local res, why = false, nil
  while res == false and sys.now() < t_end do res, why = c:poll(100) end
  c:close()
  if not res then return nil, why or "no reply in time" end
  return res
end

return M
