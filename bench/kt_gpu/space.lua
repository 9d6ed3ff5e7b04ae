-- bench/kt_gpu/space.lua: prints a task's valid tune points in kloop's own order
-- (kloop.tune.all: names sorted, each parameter's values as declared) as a header line
-- of names and one tab-separated point per line; tune_kt.py checks its restatement of
-- the space and constraint for Kernel Tuner against this list. No GPU needed.
-- usage: kloop bench/kt_gpu/space.lua TARGET
-- luacheck: read globals kloop arg

local target = arg[1]
if not target then
  io.stderr:write("usage: kloop bench/kt_gpu/space.lua TARGET\n")
  return 2
end
local task, err = kloop.load_task(target)
if not task then
  io.stderr:write("space.lua: " .. tostring(err) .. "\n")
  return 1
end
local space = kloop.tune.space(task)
if space.size == 0 then
  io.stderr:write("space.lua: task " .. task.name .. " has no tune space\n")
  return 1
end
print(table.concat(space.names, "\t"))
for _, p in ipairs(kloop.tune.all(space)) do
  local row = {}
  for i, n in ipairs(space.names) do row[i] = tostring(p[n]) end
  print(table.concat(row, "\t"))
end
return 0
