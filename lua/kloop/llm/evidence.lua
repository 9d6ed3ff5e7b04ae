-- kloop.llm.evidence: what a result may tell a model: the reason, summary and compile-log
-- excerpt of a verdict, written by kloop from the verdict's numbers, and the number
-- formats every prompt fact uses.
--
-- A runtime result comes back from the worker, which ran the candidate's code in its
-- own process: a host candidate could read a secret and put it into its reason, its
-- output or any string field of the reply. So for runtime verdicts the text a model
-- sees is written here, from the verdict name and the numbers of result.evidence;
-- strings are used only when they are one of the task's own names (argument, size,
-- case label). Free-form reasons and output tails never reach a prompt. Compile
-- verdicts are the compiler's (and kloop's fences') words about the candidate's own
-- source, made in kloop's process: kept, bounded, with absolute paths removed.
local util = require("kloop.util")

local M = {}

-- ---- numbers as a model sees them: finite, bounded digits; false or nil when unknown ----

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end
local function int(v) return finite(v) and v == math.floor(v) and math.abs(v) < 2 ^ 53 and string.format("%d", v) or nil end
local function real(v, fmt) return finite(v) and string.format(fmt or "%.3g", v) or nil end

local function num(v, fmt)
  if not finite(v) then return false end
  return string.format(fmt or "%.4g", v)
end

-- "M=4096, N=4096, K=4096": size names in the order of the kernel's arguments, then the rest.
local function sizes_text(s, task)
  if type(s) ~= "table" then return false end
  local parts, seen = {}, {}
  for _, a in ipairs(task and task.args or {}) do
    if a.name and s[a.name] ~= nil and not seen[a.name] then
      seen[a.name] = true
      parts[#parts + 1] = a.name .. "=" .. tostring(s[a.name])
    end
  end
  for _, k in ipairs(util.sorted_keys(s)) do
    if not seen[k] then parts[#parts + 1] = k .. "=" .. tostring(s[k]) end
  end
  return table.concat(parts, ", ")
end
M.finite, M.int, M.real, M.num, M.sizes_text = finite, int, real, num, sizes_text

local VERDICTS = { ok = true, wrong = true, nan = true, unwritten = true, inputs_modified = true,
  nondeterministic = true, too_fast = true, crashed = true, launch_error = true, timeout = true,
  compile_error = true, rejected = true, not_run = true }
local COMPILE_VERDICTS = { compile_error = true, rejected = true }
M.LOG_MAX_BYTES = 4096
M.COMPILE_REASON_MAX_BYTES = 600

local SIGNALS = { [4] = "SIGILL", [5] = "SIGTRAP", [6] = "SIGABRT", [7] = "SIGBUS", [8] = "SIGFPE", [9] = "SIGKILL",
  [11] = "SIGSEGV", [24] = "SIGXCPU", [25] = "SIGXFSZ", [31] = "SIGSYS" }
-- CUDA errors a launch or copy reports; only these names are passed on
local CUDA_ERRORS = { "ILLEGAL_ADDRESS", "MISALIGNED_ADDRESS", "ILLEGAL_INSTRUCTION", "INVALID_PC", "HARDWARE_STACK_ERROR",
  "LAUNCH_OUT_OF_RESOURCES", "LAUNCH_TIMEOUT", "LAUNCH_FAILED", "INVALID_VALUE", "OUT_OF_MEMORY", "ASSERT",
  "INVALID_IMAGE", "INVALID_PTX", "NO_BINARY_FOR_GPU", "NOT_FOUND", "INVALID_HANDLE", "ILLEGAL_STATE",
  "COOPERATIVE_LAUNCH_TOO_LARGE", "UNSUPPORTED_PTX_VERSION", "SHARED_OBJECT_INIT_FAILED" }


local function task_names(task)
  local args, sizes = {}, {}
  for _, a in ipairs(task and task.args or {}) do
    if type(a.name) == "string" then args[a.name] = true end
  end
  local s = task and task.sizes
  for _, set in ipairs(s and { s.bench, unpack(s.check or {}) } or {}) do
    if type(set) == "table" then for k in pairs(set) do sizes[k] = true end end
  end
  return args, sizes
end

-- "M=67, N=45" from an evidence size table: task size names with integer values only.
local function ev_size(size, task)
  if type(size) ~= "table" then return nil end
  local _, names = task_names(task)
  local kept = {}
  for k, v in pairs(size) do
    if type(k) == "string" and names[k] and int(v) then kept[k] = int(v) end
  end
  return next(kept) and sizes_text(kept, task) or nil
end

-- Where a failure was seen: "C (check1: M=67, N=45, K=33; input set 2, repeat run)".
local function ev_where(ev, task)
  local args = task_names(task)
  local arg = type(ev.arg) == "string" and args[ev.arg] and ev.arg or nil
  local case = type(ev.case) == "string" and (ev.case == "bench" or ev.case:match("^check%d+$")) and ev.case or nil
  local size = ev_size(ev.size, task)
  local inner = {}
  if case then inner[#inner + 1] = case .. (size and (": " .. size) or "") end
  if int(ev.set) then inner[#inner + 1] = "input set " .. int(ev.set) end
  if ev.phase == "repeat" then inner[#inner + 1] = "repeat run" end
  local where = arg or "an output"
  if #inner > 0 then where = where .. " (" .. table.concat(inner, "; ") .. ")" end
  return where, arg, case
end

local function bounded(s, max)
  if #s <= max then return s end
  return s:sub(1, max) .. string.format("\n... (%d more bytes)", #s - max)
end

local function path_fenced(s)
  return require("kloop.eval.compile").filter_log(s)
end

-- The reason a model is shown for a result: built from the verdict and its evidence
-- (runtime verdicts) or the compiler's bounded words (compile verdicts); false for none.
local function reason_text(r, task)
  local v = r.verdict
  if not VERDICTS[v] then return false end
  local ev = type(r.evidence) == "table" and r.evidence or {}
  if COMPILE_VERDICTS[v] then
    if type(r.reason) ~= "string" or r.reason == "" then return false end
    return bounded(path_fenced(r.reason), M.COMPILE_REASON_MAX_BYTES)
  end
  local where = ev_where(ev, task)
  local idx = int(ev.index)
  local at = idx and (" (first at element " .. idx .. ")") or ""
  if v == "ok" then
    return int(r.reps) and ("verified; timed " .. int(r.reps) .. " repetitions") or "verified"
  elseif v == "too_fast" then
    return string.format("median %s ms is below the physical floor%s (max of flops/peak and bytes/bandwidth)",
      real(r.time_ms, "%.4g") or "?", real(r.floor_ms, "%.4g") and (" " .. real(r.floor_ms, "%.4g") .. " ms") or "")
  elseif v == "wrong" or (v == "nondeterministic" and ev.rel_err ~= nil) then
    local parts = { where .. ":" }
    if real(ev.rel_err) then parts[#parts + 1] = "relative error " .. real(ev.rel_err) end
    local lim = task and task.tolerance and real(task.tolerance.rel)
    if lim then parts[#parts + 1] = "(limit " .. lim .. ")" end
    local s = table.concat(parts, " ")
    if int(ev.bad) then s = s .. ", " .. int(ev.bad) .. " elements off" end
    if idx and real(ev.out, "%.9g") and real(ev.ref, "%.9g") then
      s = s .. string.format("; worst at element %s: %s vs %s (reference)", idx, real(ev.out, "%.9g"), real(ev.ref, "%.9g"))
    end
    if v == "nondeterministic" then s = "two runs on the same inputs differ; " .. s end
    return s
  elseif v == "nondeterministic" then
    return "two runs on the same inputs differ: " .. where .. at
  elseif v == "unwritten" then
    return string.format("%s elements of %s were never written%s", int(ev.count) or "some", where, at)
  elseif v == "nan" then
    return string.format("%s NaN/Inf elements in %s where the reference is finite%s", int(ev.count) or "some", where, at)
  elseif v == "inputs_modified" then
    return "an input was changed by the kernel: " .. where .. at
  elseif v == "crashed" then
    if ev.resumed == true then return "kloop itself stopped while this candidate was being evaluated" end
    local sig = type(r.reason) == "string" and tonumber(r.reason:match("signal (%d+)"))
    if sig == 31 then return "the sandbox stopped a forbidden system call (signal 31, SIGSYS): exec, fork, socket, file write or kill" end
    local s = "the process running the candidate died"
    if sig and SIGNALS[sig] then s = s .. string.format(" (signal %d, %s)", sig, SIGNALS[sig]) end
    return s
  elseif v == "timeout" then
    local secs = type(r.reason) == "string" and tonumber(r.reason:match("within (%d+%.?%d*) s"))
    return "no answer " .. (secs and string.format("within %g s", secs) or "before the deadline") .. ": the worker was killed"
  elseif v == "launch_error" then
    local s = "a launch failed or the launch plan is invalid (check the `// kloop: launch` lines)"
    local case = select(3, ev_where(ev, task))
    if case then s = s .. " on " .. case end
    if type(r.reason) == "string" then
      for _, name in ipairs(CUDA_ERRORS) do
        if r.reason:find("CUDA_ERROR_" .. name, 1, true) then return s .. ": CUDA_ERROR_" .. name end
      end
    end
    return s
  elseif v == "not_run" then
    return "not run (the other candidate of the comparison failed)"
  end
  return false
end
M.reason_text = reason_text

-- Keeps the useful part of a compile log: errors and warnings first, at most max
-- lines and M.LOG_MAX_BYTES bytes, absolute paths removed.
local function log_text(log, max)
  if type(log) ~= "string" or log:match("^%s*$") then return false end
  log = path_fenced(log)
  if log:match("^%s*$") then return false end
  max = max or 40
  local lines = {}
  for line in (log .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("%S") then lines[#lines + 1] = line end
  end
  if #lines > max then
    local keep = {}
    for _, l in ipairs(lines) do
      if #keep < max and (l:lower():find("error", 1, true) or l:lower():find("warning", 1, true)) then keep[#keep + 1] = l end
    end
    if #keep == 0 then for i = 1, max do keep[i] = lines[i] end end
    keep[#keep + 1] = string.format("... (%d more lines)", #lines - #keep)
    lines = keep
  end
  return bounded(table.concat(lines, "\n"), M.LOG_MAX_BYTES)
end

-- The first error line of a compile log, bounded (attempt lines and summaries).
local function first_error(log)
  local text = log_text(log, 1000)
  if not text then return nil end
  for line in text:gmatch("[^\n]+") do
    if line:lower():find("error", 1, true) then
      line = line:gsub("^%s+", "")
      return #line > 200 and (line:sub(1, 200) .. "...") or line
    end
  end
end

local function verdict_name(r)
  if not r or r.verdict == nil then return false end
  return VERDICTS[r.verdict] and r.verdict or "invalid"
end

local function bound_name(b) return (b == "compute" or b == "memory") and b or false end

local function summary(r, task)
  if not r or not r.verdict then return false end
  local s = verdict_name(r)
  if finite(r.time_ms) then s = s .. string.format(", %.4g ms", r.time_ms) end
  if finite(r.tflops) then s = s .. string.format(", %.4g TFLOP/s", r.tflops) end
  if finite(r.gbps) then s = s .. string.format(", %.4g GB/s", r.gbps) end
  if finite(r.frac_peak) then
    s = s .. string.format(", %.1f%% of peak (%s-bound)", 100 * r.frac_peak, bound_name(r.bound) or "?")
  end
  local why = r.verdict ~= "ok" and reason_text(r, task)
  if why then s = s .. ": " .. why end
  -- a compile error says what the compiler said, not only that it failed
  local first = r.verdict == "compile_error" and first_error(r.compile_log)
  if first then s = s .. " (" .. first .. ")" end
  return s
end
M.log_text, M.summary, M.verdict_name, M.bound_name = log_text, summary, verdict_name, bound_name

return M
