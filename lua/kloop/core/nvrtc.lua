-- kloop.core.nvrtc: the wrapper of the core's NVRTC calls (kl_nvrtc_*, kl_compile_*): the
-- library found, its version, and compiles in forked children (start, then poll with a
-- wait; a child past its deadline is killed). The only Lua code that calls them;
-- kloop.eval.compile holds the policy (fences, options, cache, deadlines).
local cffi = require("kloop.core.ffi")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- The NVRTC version ("13.0"), or nil, msg when no NVRTC opens here.
function M.version()
  local maj, min = ffi.new("int[1]"), ffi.new("int[1]")
  local err = ffi.new("kl_err")
  if C.kl_nvrtc_version(maj, min, err) ~= 0 then return nil, ffi.string(err.msg) end
  return string.format("%d.%d", maj[0], min[0])
end

-- The library opened ("" before the first use).
function M.path() return ffi.string(C.kl_nvrtc_path()) end

-- A list of strings as a const char* array, kept alive in keep.
local function c_strings(list, keep)
  local arr = ffi.new("const char*[?]", #list, list)
  keep[#keep + 1] = arr
  return arr
end

-- Starts one compile in a forked child. c = {source, name, options = {...}, headers =
-- {{name, text}, ...}, name_exprs = {...}, nice = N (added to the child's niceness,
-- 0-19; 0 or nil: the parent's)}. Returns a handle for poll/kill (pid: the child's), or nil, msg.
function M.start(c)
  local req = ffi.new("kl_compile_req")
  local keep = { c.source, c.name }
  req.source, req.name = c.source, c.name
  req.options, req.num_options = c_strings(c.options, keep), #c.options
  if #c.headers > 0 then
    local names, texts = {}, {}
    for i, h in ipairs(c.headers) do names[i], texts[i] = h.name, h.text end
    req.header_names, req.header_sources = c_strings(names, keep), c_strings(texts, keep)
    req.num_headers = #names
  end
  local exprs = c.name_exprs or {}
  if #exprs > 0 then req.name_exprs, req.num_name_exprs = c_strings(exprs, keep), #exprs end
  req.nice = math.max(0, math.min(19, math.floor(tonumber(c.nice) or 0)))
  local job = ffi.new("kl_compile_job")
  local err = ffi.new("kl_err")
  if C.kl_compile_start(req, job, err) ~= 0 then return nil, ffi.string(err.msg) end
  return { cjob = job, pid = job.pid }
end

-- Waits up to wait_ms for the child: "running"; or the result {ok = bool (a cubin was
-- produced), log, cubin (string or nil), lowered (one name a line), seconds}; or nil, msg.
function M.poll(h, wait_ms)
  local res = ffi.new("kl_compile_res")
  local err = ffi.new("kl_err")
  local st = C.kl_compile_poll(h.cjob, wait_ms, res, err)
  if st == C.KL_ETIMEOUT then return "running" end
  if st ~= 0 then return nil, ffi.string(err.msg) end
  local out = {
    ok = res.ok == 1,
    log = res.log ~= nil and ffi.string(res.log, res.log_len) or "",
    cubin = res.cubin ~= nil and ffi.string(res.cubin, res.cubin_len) or nil,
    lowered = res.lowered ~= nil and ffi.string(res.lowered, res.lowered_len) or "",
    seconds = res.seconds,
  }
  C.kl_free(res.log)
  C.kl_free(res.cubin)
  C.kl_free(res.lowered)
  return out
end

-- Sets a running compile's niceness to the parent's plus n (0-19). True, or false where
-- that is not allowed (less nice than it is, without the privilege) or it has ended.
function M.renice(h, n)
  return C.kl_compile_renice(h.cjob, math.max(0, math.min(19, math.floor(tonumber(n) or 0)))) == 0
end

-- Ends a running compile (SIGKILL and reap).
function M.kill(h) C.kl_compile_kill(h.cjob) end

return M
