-- tests/adversarial/run.lua: every cheating or faulting candidate gets its expected
-- verdict, and a correct candidate evaluated right after each still passes.
-- usage: kloop tests/adversarial/run.lua [--compile-only] [--dir DIR --task SIDECAR --good FILE] [NAME...]
-- Defaults: the GPU suite in tests/adversarial (gemm_small.lua, good.cu).
local eval = require("kloop.eval")
local taskmod = require("kloop.task")
local compile = require("kloop.compile")
local util = require("kloop.util")
local core = require("kloop.core")

local here = util.dirname(arg[0])
local compile_only = false
local only = {}
local dir, task_path, good_path
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--compile-only" then compile_only = true
  elseif a == "--dir" then dir = arg[i + 1] i = i + 1
  elseif a == "--task" then task_path = arg[i + 1] i = i + 1
  elseif a == "--good" then good_path = arg[i + 1] i = i + 1
  else only[a] = true end
  i = i + 1
end
dir = dir or here
task_path = task_path or (here .. "/gemm_small.lua")
good_path = good_path or (here .. "/good.cu")

local task = assert(taskmod.load(task_path))
local ext = task.backend == "host" and "c" or "cu"
local cases = {}
local p = io.popen("ls " .. util.shell_quote(dir) .. "/*." .. ext)
for f in p:lines() do
  local name = util.basename(f):gsub("%." .. ext .. "$", "")
  local src = util.read_file(f)
  local expect = src:match("//%s*expect:%s*([%w_ ]+)") or src:match("/%*%s*expect:%s*([%w_ ]+)")
  if (next(only) == nil or only[name]) and f ~= good_path and expect then
    cases[#cases + 1] = { name = name, src = src, expect = expect }
  end
end
p:close()
local good = assert(util.read_file(good_path))
compile.default_deadline = 10

local function expected(c, verdict)
  for v in c.expect:gmatch("%S+") do if v == verdict then return true end end
  return false
end

local failures, rows = 0, {}
if compile_only then
  -- What can be decided without a GPU: the fences and the compiler.
  local compiler = task.backend == "host" and require("kloop.compile_host") or compile
  for _, c in ipairs(cases) do
    local job = compiler.compile(c.src, { arch = "sm_90", dir = task.dir, name = c.name .. "." .. ext, deadline = 10 })
    local got = job.ok and "compiles" or (job.rejected and "rejected" or "compile_error")
    local want = (c.expect == "rejected" or c.expect == "compile_error") and c.expect or "compiles"
    local ok = got == want
    if not ok then failures = failures + 1 end
    rows[#rows + 1] = string.format("%-24s %-16s %-16s %s", c.name, want, got, ok and "PASS" or "FAIL")
  end
else
  if task.backend == "cuda" and not core.gpu_probe(0) then
    print("SKIP: no GPU here")
    os.exit(77)
  end
  -- host workers get a 1 GiB address space here, so the allocation bomb ends quickly
  -- (also on a loaded machine: 2 GiB of page faults ran past the 8 s deadline under ctest -j8)
  local ev = eval.new(task, { timing = { budget = 0.3, min_reps = 3 }, sandbox = { max_bytes = 2^30 } })
  for _, c in ipairs(cases) do
    local r = ev:evaluate(c.src, { name = c.name .. "." .. ext })
    local ok = expected(c, r.verdict)
    local g = ev:evaluate(good, { name = "good." .. ext })
    local next_ok = g.verdict == "ok"
    if not (ok and next_ok) then failures = failures + 1 end
    rows[#rows + 1] = string.format("%-24s %-26s %-16s %-6s %s", c.name, c.expect, r.verdict,
      next_ok and "ok" or g.verdict, (ok and next_ok) and "PASS" or "FAIL")
    if not ok or os.getenv("KLOOP_VERBOSE") then rows[#rows] = rows[#rows] .. "\n    " .. tostring(r.reason) end
    if not next_ok then rows[#rows] = rows[#rows] .. "\n    next: " .. tostring(g.reason) end
  end
  ev:close()
end
print(string.format("%-24s %-26s %-16s %s", "candidate", "expected", "got", compile_only and "" or "next  result"))
for _, r in ipairs(rows) do print(r) end
print(string.format("%d of %d contained as expected", #cases - failures, #cases))
os.exit(failures == 0 and 0 or 1)
