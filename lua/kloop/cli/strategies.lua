-- kloop.cli.strategies: `kloop strategies`: every strategy a bare name can find, in
-- lookup order (./strategies, each folder of $KLOOP_PATH, the built-ins), with its
-- description, the api it requires and its path; one an earlier folder shadows is marked.
-- Files are read, never run (docs/SCRIPTING.md, "Sharing strategies").
local args = require("kloop.cli.args")
local common = require("kloop.cli.store_common")
local loader = require("kloop.search.loader")
local util = require("kloop.util")

local M = {}

M.usage = [[
usage: kloop strategies [--json]

Lists the strategies `kloop NAME` can find, in the order it looks: ./strategies, each
folder of $KLOOP_PATH, then the built-ins. A strategy is NAME.lua, or a folder
NAME/init.lua with its modules beside it. A name an earlier folder also has is marked
(shadowed): `kloop NAME` runs the first. Files are read, not run: the description is the
strategy's `description = "..."` (else its first comment line), API its `requires.api`.
Exit: 0 ok, 2 bad usage.
]]

-- The real path of folder dir and its entries (one `ls`), or nil when it is no folder.
local function list_dir(dir)
  local p = io.popen("cd " .. util.shell_quote(dir) .. " 2>/dev/null && pwd -P && ls -1A")
  local real = p:read("*l")
  local names = {}
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  if not real then return nil end
  table.sort(names)
  return real, names
end

-- The strategies of folder dir: {name, path} each, as a bare name would find them
-- (NAME.lua before NAME/init.lua); `skipped` counts Lua files that are no strategy.
local function strategies_in(dir, names, out)
  local seen, skipped = {}, 0
  for _, n in ipairs(names) do
    local name, path = n:match("^(.+)%.lua$"), nil
    if name then
      path = dir .. "/" .. n
    elseif loader.is_file(dir .. "/" .. n .. "/init.lua") then
      name, path = n, dir .. "/" .. n .. "/init.lua"
    end
    if name and not seen[name] and loader.is_file(path) then
      local info = loader.describe(util.read_file(path) or "")
      if info then
        seen[name] = true
        out[#out + 1] = { name = name, path = path, description = info.description, api = info.api }
      else
        skipped = skipped + 1
      end
    end
  end
  return skipped
end

-- Every strategy in lookup order, each with from (./strategies, KLOOP_PATH, built-in)
-- and shadowed_by (the path that wins) where an earlier one has its name.
function M.list()
  local out, folders, first, skipped = {}, {}, {}, 0
  for _, d in ipairs(require("kloop.cli.main").strategy_dirs()) do
    local real, names = list_dir(d[1])
    if real and not folders[real] then
      folders[real] = true
      local found = {}
      skipped = skipped + strategies_in(d[1], names, found)
      for _, s in ipairs(found) do
        s.from = d[2]
        if first[s.name] then s.shadowed_by = first[s.name].path else first[s.name] = s end
        out[#out + 1] = s
      end
    end
  end
  return out, skipped
end

function M.main(argv)
  local opts, pos = args.command("strategies", argv, { ["--json"] = "flag" }, M.usage)
  if not opts then return pos end
  if #pos > 0 then return args.usage_error("strategies", "unexpected argument " .. pos[1], M.usage) end
  local list, skipped = M.list()
  if opts.json then
    print(common.json(require("kloop.store.db").array(list)))
    return 0
  end
  local rows, shadowed = {}, false
  for _, s in ipairs(list) do
    shadowed = shadowed or s.shadowed_by ~= nil
    rows[#rows + 1] = { s.name .. (s.shadowed_by and " (shadowed)" or ""), s.api or "-", s.from, s.path,
      s.description or "" }
  end
  common.print_table({ "NAME", "API", "FROM", "PATH", "DESCRIPTION" }, rows)
  if shadowed then print("(shadowed): a folder earlier in the lookup has the same name; `kloop NAME` runs that one") end
  if skipped > 0 then
    print(string.format("(%d Lua file%s without a propose hook not listed: modules, not strategies)", skipped,
      skipped == 1 and "" or "s"))
  end
  return 0
end

return M
