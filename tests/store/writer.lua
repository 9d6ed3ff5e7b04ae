-- tests/store/writer.lua: the child of the kill -9 test: continues run RUN of DB until
-- BUDGET candidates are evaluated, printing "ack ID" once each evaluation is committed.
-- usage: kloop tests/store/writer.lua DB RUN BUDGET
local store = require("kloop.store.db")
local db_path, run_id, budget = arg[1], tonumber(arg[2]), tonumber(arg[3])
assert(db_path and run_id and budget, "usage: kloop tests/store/writer.lua DB RUN BUDGET")

local function result(id)
  local samples = {}
  for i = 1, 200 do samples[i] = 1 + ((id * 7919 + i * 104729) % 1000) / 1e4 end
  return { verdict = id % 5 == 0 and "wrong" or "ok", reason = "fake evaluation of c" .. id,
    time_ms = 1 + (id % 97) / 100, ci_ms = { 0.99, 1.01 }, min_ms = 0.98, spread = 0.02, reps = 200,
    samples = samples, resources = { k = { registers = 32 } }, gpu = "fake", arch = "sm_90",
    evidence = id % 5 == 0 and { case = "check1", index = id } or nil }
end

local function ack(id)
  -- one write(2) per line, after the commit: an ack on stdout means the row is durable
  io.stdout:write("ack ", id, "\n")
  io.stdout:flush()
end

local db = assert(store.open(db_path))
local st = assert(db:resume_state(run_id))
assert(db:reopen_run(run_id))
local last = st.candidates[#st.candidates] and st.candidates[#st.candidates].id
-- candidates recorded but never evaluated (killed in between) are evaluated first
for _, c in ipairs(st.pending) do
  assert(db:add_evaluation(c.id, result(c.id)))
  ack(c.id)
end
local evaluated = st.evaluated + #st.pending
while evaluated < budget do
  local id = assert(db:add_candidate(run_id, {
    source = string.format("__global__ void k%d() { /* candidate after %s */ }\n", evaluated, tostring(last)),
    proposer = "tune", parents = last and { last } or nil, params = { step = evaluated } }))
  assert(db:add_evaluation(id, result(id)))
  ack(id)
  evaluated = evaluated + 1
  last = id
end
assert(db:end_run(run_id, "done", "budget of " .. budget .. " candidates"))
db:close()
io.stdout:write("done\n")
