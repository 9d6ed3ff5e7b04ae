-- kloop.worker.main: the evaluation worker process (`kloop --worker BACKEND`). Requests
-- arrive as framed JSON on fd 3, replies leave on fd 4; stdout is left to kernels.
local cjson = require("cjson")
local proc = require("kloop.core.proc")
local sys = require("kloop.core.sys")
local protocol = require("kloop.worker.protocol")

local M = {}

-- One request from fd 3, or nil when the parent closed the channel.
local function recv() return (proc.chan_recv(3)) end

-- One reply on fd 4: true, or nil when the parent is gone.
local function send(tbl) return proc.chan_send(4, cjson.encode(tbl)) end

-- Requests that run candidates: each is the protocol function of the same name and
-- always answers with a result table (a failing candidate is a verdict, not an error).
-- (screen: the cascade's first stage, protocol.screen; cascade: both stages in one
-- request, protocol.cascade)
local CANDIDATE_OPS = { evaluate = true, screen = true, cascade = true, compare = true, profile = true }

function M.main(args)
  cjson.encode_sparse_array(true)
  cjson.encode_invalid_numbers(true)
  local backend_name = args[1] or "cuda"
  local be = require("kloop.worker.backend_" .. backend_name)
  local traced -- kloop.worker.trace: per-request totals of the backend's calls
  -- the timeline (hello's trace = "timeline", CUDA): the GPU's activities (CUPTI: kernels,
  -- copies, fills) and the backend's calls, as the idle split of each candidate request
  -- (result.worker_timeline: kloop.worker.trace.idle_split; TIMELINE=1 bench/eval_breakdown.lua).
  -- A profile request ends it (it stops the activity records itself).
  local spans, timeline, raw -- (raw: the backend unwrapped, the timeline's own calls)
  local ready = false
  while true do
    local msg = recv()
    if not msg then return 0 end -- parent closed the channel: exit quietly
    local ok, req = pcall(cjson.decode, msg)
    local reply
    if not ok or type(req) ~= "table" then
      reply = { ok = false, error = "bad request: " .. tostring(req) }
    elseif req.op == "quit" then
      send({ ok = true })
      return 0
    else
      local okc, res = xpcall(function()
        if req.op == "hello" then
          if req.trace and not traced then
            traced = {}
            if req.trace == "timeline" and be.clock_ns then spans, raw = {}, be end
            be = require("kloop.worker.trace").wrap(be, traced, spans, be.clock_ns)
            require("kloop.worker.trace").wrap_module(require("kloop.core.buf"), traced, "host.")
          end
          local info, err = be.init(req)
          if not info then return { ok = false, error = err } end
          if spans and not timeline then
            local oka, aerr = be.activity_start()
            if oka then oka, aerr = be.activity_timeline(true) end
            if not oka then return { ok = false, error = "timeline: " .. tostring(aerr) } end
            timeline = true
          end
          ready = true
          return { ok = true, gpu = info, pid = sys.getpid() }
        elseif not ready then
          return { ok = false, error = "send hello first" }
        elseif req.op == "setup" then
          if req.flush_cubin and be.set_flush_kernel then
            local okf, ferr = be.set_flush_kernel(req.flush_cubin)
            if not okf then return { ok = false, error = ferr } end
          end
          if req.check_cubin and be.set_check_kernel then
            local okc2, cerr = be.set_check_kernel(req.check_cubin)
            if not okc2 then return { ok = false, error = cerr } end
          end
          if be.set_compare_kernel then -- (without one, outputs are compared on the host)
            local okc3, cerr3 = be.set_compare_kernel(req.compare_cubin)
            if not okc3 then return { ok = false, error = cerr3 } end
          end
          local t0 = sys.now()
          local r, err = protocol.setup(be, req.spec, req.ref_cubin)
          if not r then return { ok = false, error = err } end
          -- NVML opened now (its first call takes about 12 ms), not during the first
          -- candidate's timing, where the GPU would wait for it (round15a's timeline)
          if be.sample then be.sample() end
          -- (the set-up's backend calls are its own, not the first candidate's)
          if traced then r.worker_trace = require("kloop.worker.trace").take(traced, sys.now() - t0) end
          r.ok = true
          return r
        elseif CANDIDATE_OPS[req.op] then
          local t0 = sys.now()
          local c0
          if timeline then
            raw.activity_take() -- (what ran before this request is not its own)
            for k = #spans, 1, -1 do spans[k] = nil end
            c0 = raw.clock_ns()
          end
          local r = protocol[req.op](be, req)
          if traced then r.worker_trace = require("kloop.worker.trace").take(traced, sys.now() - t0) end
          if timeline and req.op ~= "profile" then
            local c1 = raw.clock_ns()
            local recs = raw.activity_take()
            if recs then r.worker_timeline = require("kloop.worker.trace").idle_split(recs, spans, c0, c1, 0) end
          end
          r.ok = true
          return r
        elseif req.op == "peaks" then
          if not be.measure_peaks then return { ok = false, error = "no peaks on the " .. backend_name .. " backend" } end
          local r, err = be.measure_peaks(req.cubin)
          if not r then return { ok = false, error = err } end
          r.ok = true
          return r
        end
        return { ok = false, error = "unknown op " .. tostring(req.op) }
      end, debug.traceback)
      reply = okc and res or { ok = false, error = "worker error: " .. tostring(res) }
    end
    io.stdout:flush()
    if not send(reply) then return 1 end
    -- the context is dead, or the state could not be shown intact: exit, the parent restarts us
    if reply.fatal or reply.restart then return 3 end
  end
end

return M
