-- kloop.cli.luaprof: where the driver's own CPU time goes, for benches (KLOOP_LUAPROF=FILE).
-- LuaJIT's sampling profiler (jit.profile, a timer on the process's CPU time) takes a
-- stack every millisecond; at the end FILE gets the samples by VM state (compiled,
-- interpreted, C, GC, JIT), then the 40 functions with the most samples on top of the
-- stack (self, by line) and anywhere in it (total, by function). Time spent blocked (waiting on the worker, a
-- compiler, a pipe) takes no CPU and has no samples: the run's time line says that part.
local M = {}

local STATES = { N = "compiled Lua", I = "interpreted Lua", C = "C code", G = "garbage collector", J = "JIT compiler" }

-- Starts sampling; returns a profile to pass to M.stop, or nil where jit.profile is missing.
function M.start(path)
  local ok, prof = pcall(require, "jit.profile")
  if not ok then return nil end
  local p = { path = path, prof = prof, self = {}, total = {}, states = {}, n = 0 }
  prof.start("fi1", function(th, samples, vmstate)
    p.n = p.n + samples
    p.states[vmstate] = (p.states[vmstate] or 0) + samples
    local line = prof.dumpstack(th, "pl", 1)
    p.self[line] = (p.self[line] or 0) + samples
    local seen = {}
    for frame in prof.dumpstack(th, "pF\n", 40):gmatch("[^\n]+") do
      if not seen[frame] then
        seen[frame] = true
        p.total[frame] = (p.total[frame] or 0) + samples
      end
    end
  end)
  return p
end

local function top(t, n)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return t[a] > t[b] or (t[a] == t[b] and a < b) end)
  local out = {}
  for i = 1, math.min(n, #keys) do out[i] = keys[i] end
  return out
end

-- Stops sampling and writes the tables to the profile's file.
function M.stop(p)
  if not p then return end
  p.prof.stop()
  local f = io.open(p.path, "w")
  if not f then
    io.stderr:write("kloop: KLOOP_LUAPROF: cannot write " .. p.path .. "\n")
    return
  end
  f:write(string.format("samples: %d (1 ms of the process's CPU each)\n", p.n))
  for _, s in ipairs(top(p.states, 10)) do
    f:write(string.format("  %-18s %6d  %5.1f%%\n", STATES[s] or s, p.states[s], 100 * p.states[s] / math.max(p.n, 1)))
  end
  for _, part in ipairs({ { "self", p.self }, { "total", p.total } }) do
    f:write(string.format("\nby %s:\n", part[1]))
    for _, k in ipairs(top(part[2], 40)) do
      f:write(string.format("  %6d  %5.1f%%  %s\n", part[2][k], 100 * part[2][k] / math.max(p.n, 1), k))
    end
  end
  f:close()
end

return M
