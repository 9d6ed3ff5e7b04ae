-- tests/promote/seed.lua: a store with one search-like run over tests/promote/vadd.c: the
-- baseline and three candidates, each evaluated by the evaluator (all verified).
-- usage: kloop tests/promote/seed.lua DB [TASK_DIR]   prints "c:ID name verdict" lines
local store = require("kloop.store.db")
local taskmod = require("kloop.eval.task")
local evaluator = require("kloop.eval.evaluator")
local util = require("kloop.util")

local path = assert(arg[1], "usage: kloop tests/promote/seed.lua DB [TASK_DIR]")
local dir = arg[2] or "tests/promote"
local task = assert(taskmod.load(dir .. "/vadd.c"))
local db = assert(store.open(path))
local run = assert(db:begin_run({ strategy_path = "tests/promote/seed.lua", task_name = task.name,
  task_path = dir .. "/vadd.c", seed = 1 }))
local ev = evaluator.new(task, { timing = { budget = 0.2 } })
local base
for _, name in ipairs({ "vadd.c", "vadd_fast.c", "vadd_unroll8.c", "vadd_overrun.c" }) do
  local src = assert(util.read_file(dir .. "/" .. name))
  local id = assert(db:add_candidate(run, { source = src, name = name, proposer = base and "user" or "baseline",
    parents = base and { base } or nil }))
  base = base or id
  local r = ev:evaluate(src)
  assert(db:add_evaluation(id, r))
  print(string.format("c:%d %s %s", id, name, r.verdict))
end
ev:close()
assert(db:end_run(run, "done", "seeded"))
db:close()
