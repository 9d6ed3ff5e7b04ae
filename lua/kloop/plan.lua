-- kloop.plan: launch plans (grid, block, shared memory; several kernels in sequence),
-- from the task's launch function or from a candidate's `// kloop: launch` comments.
local M = {}

local LIMITS = { block_threads = 1024, block = { 1024, 1024, 64 }, grid = { 2^31 - 1, 65535, 65535 } }

local function dims(v, what)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or #v < 1 or #v > 3 then return nil, what .. " must be 1 to 3 numbers" end
  local out = {}
  for i = 1, 3 do
    local x = v[i] or 1
    if type(x) ~= "number" or x < 1 or x ~= math.floor(x) then
      return nil, string.format("%s[%d] = %s is not a positive integer", what, i, tostring(v[i]))
    end
    out[i] = x
  end
  return out
end

-- Checks and normalizes one plan: a list of {entry, grid = {x,y,z}, block = {x,y,z}, smem}.
function M.normalize(raw, default_entry)
  if type(raw) ~= "table" then return nil, "a launch plan must be a table" end
  local list = raw.grid and { raw } or raw
  if #list == 0 then return nil, "the launch plan lists no kernel" end
  local out = {}
  for k, l in ipairs(list) do
    local where = #list > 1 and ("kernel " .. k .. ": ") or ""
    if type(l) ~= "table" then return nil, where .. "not a table" end
    local g, err = dims(l.grid, "grid")
    if not g then return nil, where .. err end
    local b
    b, err = dims(l.block, "block")
    if not b then return nil, where .. err end
    for i = 1, 3 do
      if g[i] > LIMITS.grid[i] then return nil, string.format("%sgrid[%d] = %d exceeds %d", where, i, g[i], LIMITS.grid[i]) end
      if b[i] > LIMITS.block[i] then return nil, string.format("%sblock[%d] = %d exceeds %d", where, i, b[i], LIMITS.block[i]) end
    end
    if b[1] * b[2] * b[3] > LIMITS.block_threads then
      return nil, string.format("%sblock has %d threads, more than 1024", where, b[1] * b[2] * b[3])
    end
    local smem = l.smem or 0
    if type(smem) ~= "number" or smem < 0 or smem ~= math.floor(smem) then
      return nil, where .. "smem must be a non-negative integer (bytes)"
    end
    local entry = l.entry or default_entry
    if type(entry) ~= "string" then return nil, where .. "entry must be a kernel name" end
    out[k] = { entry = entry, grid = g, block = b, smem = smem }
  end
  return out
end

-- The task's own plan at a size; raises a task error (load time) when it fails.
function M.for_task(task, size, file)
  local taskmod = require("kloop.task")
  local launch = task.launch
  local ok, raw = true, launch
  if type(launch) == "function" then ok, raw = pcall(launch, size) end
  if not ok then taskmod.fail(file or task.file, "launch", "the launch function failed: " .. tostring(raw)) end
  local p, err = M.normalize(raw, task.entry)
  if not p then taskmod.fail(file or task.file, "launch", err) end
  return p
end

-- A candidate's own plan: `// kloop: launch grid = {...}, block = {...}, smem = ...`
-- lines, one per kernel in order, evaluated in a sandbox with the sizes in scope.
-- Returns nil when the source has none (the task's plan applies), or a function of
-- the size that returns plan or nil, err.
function M.from_source(source, default_entry, defines)
  local exprs, consts = {}, {}
  for line in source:gmatch("[^\n]+") do
    local e = line:match("^%s*//%s*kloop:%s*launch%s+(.+)$")
    if e then exprs[#exprs + 1] = e end
    -- numeric #defines are in scope too (tile sizes), overridden by -D parameters
    local name, value = line:match("^%s*#%s*define%s+([%a_][%w_]*)%s+(%-?[%d%.]+)%s*$")
    if name and tonumber(value) then consts[name] = tonumber(value) end
  end
  for k, v in pairs(defines or {}) do consts[k] = tonumber(v) or v end
  if #exprs == 0 then return nil end
  local fns = {}
  for i, e in ipairs(exprs) do
    local fn, err = loadstring("return {" .. e .. "}", "=launch comment " .. i)
    if not fn then
      return function() return nil, "launch comment " .. i .. " does not parse: " .. err end
    end
    -- Compiled traces skip count hooks, so the JIT stays off for these chunks.
    jit.off(fn, true)
    fns[i] = fn
  end
  return function(size)
    local taskmod = require("kloop.task")
    local list = {}
    local scope = {}
    for k, v in pairs(consts) do scope[k] = v end
    for k, v in pairs(size) do scope[k] = v end
    for i, fn in ipairs(fns) do
      setfenv(fn, taskmod.sandbox_env(scope))
      -- An LLM wrote this comment: bound its work so it cannot stall the parent.
      debug.sethook(function() error("launch comment runs too long", 2) end, "", 1000000)
      local ok, v = pcall(fn)
      debug.sethook()
      if not ok then return nil, "launch comment " .. i .. " failed: " .. tostring(v) end
      list[i] = v
    end
    return M.normalize(list, default_entry)
  end
end

return M
