-- tests/spec/support/backend_sim.lua: a test double of a backend, so the protocol
-- (verification, timing, verdicts) runs in CI without a GPU. "Modules" are Lua files
-- returning kernels: function(params, grid, block) that read and write host memory.
local M = { name = "sim", info = { name = "sim", arch = "sim" }, launches = 0 }
M.fail_next = nil -- set to {msg=, fatal=} to make the next launch fail

function M.init() return M.info end
function M.load(path)
  local chunk, err = loadfile(path)
  if not chunk then return nil, err end
  return { kernels = chunk() }
end
function M.unload() end
function M.func(mod, entry)
  local fn = mod.kernels[entry]
  if not fn then return nil, "kernel '" .. entry .. "' not found" end
  return fn
end
function M.attrs() return { registers = 1 } end
function M.prepare_launch(fn, smem)
  if smem > 48 * 1024 then return nil, "too much shared memory" end
  return true
end
-- Memory is host memory: the host backend's own operations serve (its init, which
-- enters the sandbox, is not used here).
local host = require("kloop.backend_host")
M.alloc, M.free, M.h2d, M.d2h, M.d2d, M.fill32 = host.alloc, host.free, host.h2d, host.d2h, host.d2d, host.fill32
function M.launch(fn, grid, block, smem, params)
  if M.fail_next then
    local f = M.fail_next
    M.fail_next = nil
    return nil, f.msg, f.fatal
  end
  M.launches = M.launches + 1
  -- A full collection before every launch: parameter slots that are not anchored to
  -- their array would be freed here, and the kernel would read garbage.
  if not M.timing then collectgarbage("collect") end
  fn(params, grid, block)
  return true
end
function M.sync() return true end
function M.flush_cache() return true end
local t0, t1
function M.timer_start() collectgarbage("collect") M.timing = true t0 = os.clock() return true end
function M.timer_stop() t1 = os.clock() M.timing = false return true end
function M.timer_read() return (t1 - t0) * 1e3 + 1e-3 end
return M
