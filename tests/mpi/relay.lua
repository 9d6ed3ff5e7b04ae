-- tests/mpi/relay.lua: evaluators whose workers are remote (`kloop --worker-remote SOCK
-- host`, served by kloop-mpi's worker ranks) against local ones, on the host adversarial
-- task: the same verdicts, a crash reported with its signal and the worker's output, a
-- restart on the same socket, and a hung candidate whose real worker is killed on the
-- far side when the driver's deadline kills the proxy.
-- usage: mpirun -n 2 kloop-mpi tests/mpi/relay.lua [TASK] (kloop-mpi adds --remote-workers S,...)
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local task_path, socks = "tests/adversarial/host/sgemm_small.lua", nil
local i = 1
while arg[i] do
  if arg[i] == "--remote-workers" then socks = arg[i + 1] i = i + 1 else task_path = arg[i] end
  i = i + 1
end
assert(socks, "usage: kloop tests/mpi/relay.lua [TASK] --remote-workers SOCK[,SOCK...]")
local sock = socks:match("^[^,]+")
local task = assert(taskmod.load(task_path))
local dir = "tests/adversarial/host/"

-- pids of the ranks' real workers (`kloop --worker host` under kloop-mpi) running now
local function real_workers()
  local found = {}
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    if pid:match("^%d+$") then
      local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
      local cmd = f and f:read("*a") or ""
      if f then f:close() end
      local st = io.open("/proc/" .. pid .. "/stat")
      local ppid = st and tonumber((st:read("*a") or ""):match("^%d+ %b() %S+ (%d+)"))
      if st then st:close() end
      -- a rank's worker is a child of kloop-mpi (other kloop runs on this host are not ours)
      local pf = ppid and io.open("/proc/" .. ppid .. "/cmdline", "rb")
      local pcmd = pf and pf:read("*a") or ""
      if pf then pf:close() end
      if cmd:find("\0--worker\0host", 1, true) and (pcmd:match("^[^%z]*") or ""):match("kloop%-mpi$") then found[#found + 1] = pid end
    end
  end
  p:close()
  return found
end

local cands = {
  { "baseline", nil, "ok" },
  { "segfault.c", dir .. "segfault.c", "crashed" },
  { "baseline again", nil, "ok" },
  { "stdout_flood.c", dir .. "stdout_flood.c", nil },
  { "spin_forever.c", dir .. "spin_forever.c", "timeout" },
  { "baseline after the hang", nil, "ok" },
}

local failures = 0
local function check(cond, what)
  print((cond and "ok   " or "FAIL ") .. what)
  if not cond then failures = failures + 1 end
end

local opts = { timing = { budget = 0.02 } }
local remote = evaluator.new(task, { timing = opts.timing,
  worker_argv = { sys.exe_path(), "--worker-remote", sock, "host" } })
local lo = evaluator.new(task, { timing = opts.timing })
for _, c in ipairs(cands) do
  local src = c[2] and assert(util.read_file(c[2])) or nil
  local t0 = sys.now()
  local r = remote:evaluate(src)
  local wall = sys.now() - t0
  if c[3] == "timeout" then
    -- the proxy was SIGKILLed at the deadline: the far side must kill the real worker
    local left
    for _ = 1, 40 do
      left = real_workers()
      if #left == 0 then break end
      os.execute("sleep 0.05")
    end
    if #left > 0 then os.execute("ps -o pid,ppid,stat,etime,cmd -p " .. table.concat(left, ",")) end
    check(#left == 0, string.format("%s: no real worker left running after the deadline (%s)", c[1],
      #left == 0 and "none" or table.concat(left, " ")))
  else
    local l = lo:evaluate(src)
    check(r.verdict == l.verdict, string.format("%s: remote %s, local %s", c[1], r.verdict, l.verdict))
  end
  if c[3] then check(r.verdict == c[3], string.format("%s: %s as expected (%.1f s)", c[1], c[3], wall)) end
  if c[3] == "crashed" then
    check((r.reason or ""):find("signal 11", 1, true) ~= nil,
      c[1] .. ": the reason names the signal: " .. tostring(r.reason))
    check((r.output_tail or ""):find("rank 1", 1, true) ~= nil, c[1] .. ": the output tail says which rank")
  end
end
-- the worker's environment on the far side: the allow-list of the backend, not the rank's
local probe = remote:evaluate(assert(util.read_file("tests/mpi/env_probe.c")))
local tail = probe.output_tail or ""
check(tail:find("probe: PATH seen, secret unset", 1, true) ~= nil,
  "the remote worker sees PATH but not the rank's other variables: " .. (tail:match("probe: [^\n]*") or tail))
remote:close()
lo:close()
-- a client that is not a proxy: a path for a backend is refused, no worker starts
if os.execute("command -v python3 >/dev/null 2>&1") == 0 then
  local p = io.popen("python3 tests/mpi/bad_hello.py '" .. sock .. "' 2>&1")
  local said = p:read("*a")
  p:close()
  check(said:find("end: kind 0 code 2: kloop-mpi: a bad hello", 1, true) ~= nil, "a bad hello is refused: " .. said)
end
print(failures == 0 and "relay: all checks passed" or ("relay: " .. failures .. " checks failed"))
os.exit(failures == 0 and 0 or 1)
