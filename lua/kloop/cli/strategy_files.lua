-- kloop.cli.strategy_files: `kloop strategy-files RUN -o DIR`: writes the exact Lua files
-- a run's strategy loaded (its entry file and modules, laid out as they were beside it)
-- and prints the command that runs them again with the run's seed and options.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local options = require("kloop.search.options")

local M = {}

M.usage = common.usage([[
usage: kloop strategy-files RUN -o DIR [--force] [--db PATH] [--json]

Writes into DIR the Lua files run RUN's strategy loaded from outside kloop (the entry
file and every module it required, in their layout), as stored when they ran, and prints
the command that reruns them with the run's seed and options. A file already in DIR is
not overwritten unless --force.
]])

-- Options that say how a run was kept or continued, not what it searched.
local NOT_SEARCH = { seed = true, resume = true, force = true, db = true, no_store = true, quiet = true,
  forced_resumes = true }

-- Where a stored file goes inside DIR: the entry by its file name, a module by its name
-- (dots as folders; NAME/init.lua when it was one), so require finds it the same way.
function M.relative_path(f)
  if f.role == "entry" then
    local base = util.basename(f.path)
    if base == "" or base == "-" then base = "stdin.lua" end
    return base
  end
  local rel = f.module:gsub("%.", "/"):gsub("^/+", "")
  if f.path:match("/init%.lua$") and not f.path:match("/" .. util.escape_pattern(rel) .. "%.lua$") then
    return rel .. "/init.lua"
  end
  return rel .. ".lua"
end

-- The command line words of a run's options: those that differ from the common defaults,
-- and every option of the strategy's own (their defaults are in its code), sorted.
function M.option_words(run_options)
  local default = {}
  for _, o in ipairs(options.common_options) do default[o[1]] = o[2] end
  local words = {}
  for _, k in ipairs(util.sorted_keys(run_options or {})) do
    local v = run_options[k]
    local flag = "--" .. k:gsub("_", "-")
    if not NOT_SEARCH[k] and type(v) ~= "table" and v ~= default[k] then
      if v == true then words[#words + 1] = flag
      elseif v == false then words[#words + 1] = flag .. "=false"
      else
        words[#words + 1] = flag
        words[#words + 1] = type(v) == "number" and v == math.floor(v) and string.format("%d", v) or tostring(v)
      end
    end
  end
  return words
end

-- A shell word, bare when it needs no quotes.
local function word(s)
  if s:match("^[%w_%-%./=,:+]+$") then return s end
  return util.shell_quote(s)
end

-- The command that reruns the exported files: kloop DIR/ENTRY TASK --seed N options...
function M.rerun_command(dir, entry_rel, run)
  local script = dir .. "/" .. entry_rel
  if entry_rel == "init.lua" then script = dir end
  local words = { "kloop", word(script), word(run.task_path or "TASK") }
  if run.seed then
    words[#words + 1] = "--seed"
    words[#words + 1] = type(run.seed) == "number" and string.format("%d", run.seed) or tostring(run.seed)
  end
  for _, w in ipairs(M.option_words(run.options)) do words[#words + 1] = word(w) end
  return table.concat(words, " ")
end

function M.main(argv)
  local opts, pos = common.parse("strategy-files", argv, M.usage, { ["-o"] = "value", ["--force"] = "flag" })
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("strategy-files", "give one RUN", M.usage) end
  if not opts.o or opts.o == "" then return args.usage_error("strategy-files", "give -o DIR", M.usage) end
  local kind, id = common.parse_ref(pos[1], "run")
  if kind ~= "run" then return args.usage_error("strategy-files", kind and "give a run, not a candidate" or id, M.usage) end
  local db, derr = common.open_db("strategy-files", opts)
  if not db then return derr end
  local run, rerr = db:run(id)
  if not run then db:close() return common.say_error("strategy-files", rerr) end
  local files = db:run_files(id)
  db:close()
  local note
  if #files == 0 then
    if not run.strategy_text then return common.say_error("strategy-files", string.format("run %d keeps no strategy files", id)) end
    -- a run from before kloop recorded every file: its entry is all there is
    files = { { module = util.basename(run.strategy_path or "strategy.lua"), path = run.strategy_path or "strategy.lua",
      hash = run.strategy_hash or sys.content_hash(run.strategy_text), text = run.strategy_text, role = "entry" } }
    note = "this run recorded its entry file only (it is older than kloop's record of every file)"
  end
  local dir = opts.o:gsub("/+$", "")
  local out, entry_rel = {}, nil
  for _, f in ipairs(files) do
    local rel = M.relative_path(f)
    if f.role == "entry" then entry_rel = rel end
    local target = dir .. "/" .. rel
    if util.file_exists(target) and not opts.force then
      return common.say_error("strategy-files", target .. " exists (give --force to overwrite)")
    end
    out[#out + 1] = { module = f.module, role = f.role, hash = f.hash, stored_path = f.path, path = target,
      text = f.text, same = sys.content_hash(f.text) == f.hash }
  end
  for _, f in ipairs(out) do
    util.mkdir_p(util.dirname(f.path))
    local ok, werr = util.write_file(f.path, f.text)
    if not ok then return common.say_error("strategy-files", "cannot write " .. f.path .. ": " .. tostring(werr)) end
    f.text = nil
  end
  local cmd = entry_rel and M.rerun_command(dir, entry_rel, run)
  if opts.json then
    print(common.json({ run = id, dir = dir, files = require("kloop.store.db").array(out), command = cmd, note = note }))
    return 0
  end
  for _, f in ipairs(out) do
    print(string.format("%-7s %s  %s  (was %s)", f.role, f.path, f.hash, f.stored_path))
    if not f.same then
      print("        its stored text differs from what ran (a secret was scrubbed from it): check before rerunning")
    end
  end
  if note then print(note) end
  if cmd then print("rerun: " .. cmd) end
  return 0
end

return M
