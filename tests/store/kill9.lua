-- tests/store/kill9.lua: kills the store writer with SIGKILL at 20 random moments and
-- checks that nothing it acknowledged is lost and that the run resumes to its budget.
-- usage: kloop tests/store/kill9.lua   (KLOOP_KILL9_SEED=N replays a sequence of delays)
local store = require("kloop.store.db")
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local exe = assert(sys.exe_path(), "cannot find the kloop binary")
local here = util.dirname(debug.getinfo(1, "S").source:sub(2))
local writer = here .. "/writer.lua"
local q = util.shell_quote
local tmp = os.tmpname()
os.remove(tmp)
assert(util.mkdir_p(tmp))
local dbp = tmp .. "/kill9.db"
local seed = tonumber(os.getenv("KLOOP_KILL9_SEED")) or (os.time() % 1000000)
math.randomseed(seed)
print(string.format("kill9: seed %d, database %s", seed, dbp))

local failures = 0
local function fail(fmt, ...)
  failures = failures + 1
  print("FAIL: " .. string.format(fmt, ...))
end

local function now() return sys.now() end

-- Runs the writer; with a delay, SIGKILLs it after that many seconds. Returns stdout, stderr.
local function run_writer(run_id, budget, delay, tag)
  local out, err = tmp .. "/" .. tag .. ".out", tmp .. "/" .. tag .. ".err"
  local cmd = string.format("%s %s %s %d %d > %s 2> %s", q(exe), q(writer), q(dbp), run_id, budget, q(out), q(err))
  if delay then
    cmd = string.format("%s & p=$!; sleep %.3f; kill -9 $p 2>/dev/null; wait $p 2>/dev/null; exit 0", cmd, delay)
  end
  os.execute(cmd)
  return util.read_file(out) or "", util.read_file(err) or ""
end

-- Calibration: how many candidates a second this disk commits, so the budget outlasts
-- the kills here and on a slow CI disk alike.
local cal = tmp .. "/cal.db"
do
  local db = assert(store.open(cal))
  local run = assert(db:begin_run { task_name = "calibration" })
  db:close()
  -- (1000, not 200: the writer's own start, a good part of a short calibration, made the
  -- rate look low on a loaded machine, and the rounds then used the budget up early)
  local t0 = now()
  local p = io.popen(string.format("%s %s %s %d 1000", q(exe), q(writer), q(cal), run))
  p:read("*a")
  p:close()
  local rate = 1000 / math.max(now() - t0, 1e-3)
  _G.BUDGET = math.max(300, math.min(20000, math.floor(rate * 6)))
  print(string.format("kill9: %.0f candidates/s here, budget %d", rate, BUDGET))
end
local budget = _G.BUDGET

local db = assert(store.open(dbp))
local run = assert(db:begin_run { task_name = "kill9", task_path = "kernels/gemm.cu", budget = { candidates = budget } })
db:close()

local acked = {}
local nacked = 0
local function read_acks(text)
  local n = 0
  -- only complete lines count: a kill can cut a line short
  for id in text:gmatch("ack (%d+)\n") do
    id = tonumber(id)
    if not acked[id] then acked[id] = true nacked = nacked + 1 end
    n = n + 1
  end
  return n
end

-- Every acknowledged candidate is present with an evaluation; returns the store's
-- evaluated candidate ids as a set and their count.
local function check_store(label)
  local d, err = store.open(dbp)
  if not d then fail("%s: cannot reopen: %s", label, err) return {}, 0 end
  local ic = d:integrity_check()
  if ic ~= "ok" then fail("%s: integrity_check says %s", label, tostring(ic)) end
  local rows = assert(d:query([[SELECT DISTINCT c.id FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
    WHERE c.run_id = ?]], run))
  d:close()
  local have, n = {}, 0
  for _, r in ipairs(rows) do have[r.id] = true n = n + 1 end
  for id in pairs(acked) do
    if not have[id] then fail("%s: acknowledged candidate %d has no evaluation in the store", label, id) end
  end
  return have, n
end

local t_start = now()
local kills, finished_early = 0, 0
for round = 1, 20 do
  local delay = 0.02 + math.random() * 0.28
  local out, err = run_writer(run, budget, delay, "round" .. round)
  local n = read_acks(out)
  if err:find("%S") then fail("round %d: the writer complained: %s", round, err) end
  if out:find("done\n", 1, true) then finished_early = finished_early + 1 else kills = kills + 1 end
  local _, evaluated = check_store("round " .. round)
  print(string.format("round %2d: SIGKILL after %3.0f ms, %4d acks, %5d acknowledged, %5d evaluated in the store",
    round, delay * 1e3, n, nacked, evaluated))
end
if finished_early > 5 then fail("the writer finished before %d of the kills: the budget is too small", finished_early) end

-- resume without a kill: the run completes its budget
local out, err = run_writer(run, budget, nil, "final")
read_acks(out)
if not out:find("done\n", 1, true) then fail("the resumed writer did not finish: %s", err) end
local have, evaluated = check_store("final")
local d = assert(store.open(dbp))
local r = assert(d:run(run))
local cands = assert(d:candidates(run))
d:close()
if r.status ~= "done" then fail("run status is %s, not done", tostring(r.status)) end
if #cands ~= budget then fail("the run has %d candidates, its budget is %d", #cands, budget) end
if evaluated ~= budget then fail("%d candidates are evaluated, the budget is %d", evaluated, budget) end
for _, c in ipairs(cands) do
  if not c.evaluation then fail("candidate %d was never evaluated", c.id) end
end
-- an evaluation committed just before a kill may miss its ack line: at most one per kill
local unacked = 0
for id in pairs(have) do if not acked[id] then unacked = unacked + 1 end end
if unacked > kills then fail("%d evaluated candidates were never acknowledged, more than the %d kills", unacked, kills) end
print(string.format("kill9: %d kills, %d candidates (%d acknowledged, %d committed before a kill cut the ack), %.1f s",
  kills, #cands, nacked, unacked, now() - t_start))
if failures > 0 then
  print(string.format("kill9: %d failures (seed %d; the files are in %s)", failures, seed, tmp))
  return 1
end
os.execute("rm -rf " .. q(tmp))
print("kill9: ok")
return 0
