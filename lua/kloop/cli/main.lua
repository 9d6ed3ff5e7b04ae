-- kloop.cli.main: command-line parsing, script running and the subcommands.
local sys = require("kloop.core.sys")
local util = require("kloop.util")

local M = {}

M.usage_text = [[
usage: kloop [options] SCRIPT [TARGET] [-- script args]
       kloop COMMAND [args]
       kloop                  (on a terminal: interactive REPL)

Runs a Lua SCRIPT with the kloop module loaded. A bare name (kloop beam ...) is
looked up as strategies/NAME.lua, then in each folder of $KLOOP_PATH (a folder
NAME/ with an init.lua is a strategy package: kloop strategies lists them all).

options:
  -e CHUNK      run a Lua chunk (before the script, if any)
  -i            enter the REPL after running the script or chunks
  -             read the script from standard input
  -q, --quiet   less output
  -h, --help    print this help and exit
  --version     print versions and the GPU backend found, then exit

commands:
  doctor        check each component (GPU, NVRTC, CUPTI, C compiler, LLM, database)
  compile TARGET     compile a kernel with NVRTC (no GPU needed)
  check TARGET       verify and time a kernel (--candidate FILE)
  profile TARGET     check, then CUPTI counters, roofline and hints (--metrics a,b)
  space TARGET       the tune space: parameters, raw and valid size (also: tune TARGET --space)
  import-kt FILE.json  a kloop sidecar from a Kernel Tuner T1 input file (-o SIDECAR.lua)
  version       same as --version
  runs          one line per run in the store (--db PATH, default $KLOOP_DB or ./kloop.db)
  show ID       a run, or a candidate (c:ID) with its lineage and evaluation
  best [RUN]    the best verified candidate
  diff A B      source diff between two candidates
  export ID -o DIR   a candidate's kernel, launch plan header and provenance.json
  replay ID     re-evaluate a stored candidate and compare with the stored result
  report [RUN...] [-o FILE.html]   the process audit as one self-contained HTML page
  audit [RUN...] [--json]          the same tables in the terminal
  mcp TASK      a Model Context Protocol server on stdio over the evaluator (docs/AGENTS.md)
  strategies    the strategies a bare name finds, in lookup order (--json)
  strategy-files RUN -o DIR   the exact Lua files a run's strategy loaded, and its rerun command

exit codes:
  0     done: the strategy finished, or a budget ran out
  1     failed: the strategy raised, no proposal could be had (a refused key or a
        spent quota stops at once), the store could not record a fact, or an error
  2     bad usage (an unknown option, a value of the wrong kind)
  130   interrupted by Ctrl-C (SIGINT); 143 by SIGTERM, 129 by SIGHUP: the done hook
        ran and the run is stored as interrupted (--resume continues it)

environment:
  KLOOP_PATH        extra folders of strategy scripts (colon-separated)
  KLOOP_CUDA_HOME   CUDA toolkit root for NVRTC/CUPTI (default /usr/local/cuda)
  KLOOP_LUA_DIR     load the kloop Lua library from this folder instead
  KLOOP_LLM_TIMEOUT, KLOOP_LLM_IDLE_TIMEOUT, KLOOP_LLM_CONNECT_TIMEOUT, KLOOP_LLM_DEADLINE
                    LLM limits in seconds (docs/LLM.md); KLOOP_LLM_MAX_REPLY a size (1M)
]]

M.commands = {}

local function usage_error(msg)
  util.eprintf("kloop: %s\n%s", msg, M.usage_text)
  return 2
end
M.usage_error = usage_error

-- Formats a Lua error for the user: `kloop: FILE:LINE: message` then the traceback.
local function report(err)
  if err == nil then return 1 end -- os.exit emulations unwind with nil: nothing to say
  if type(err) == "table" then err = err.message or tostring(err) end
  err = tostring(err)
  util.eprintf("kloop: %s\n", err)
  return 1
end
M.report = report

local function traceback(msg)
  if type(msg) ~= "string" then return msg end
  return debug.traceback(msg, 2)
end

-- Runs fn(...) protected; prints the error with a traceback; returns ok.
function M.protect(fn, ...)
  local args, n = { ... }, select("#", ...)
  local ok, err = xpcall(function() return fn(unpack(args, 1, n)) end, traceback)
  if not ok then report(err) end
  return ok, err
end

-- A strategy file at path: the file itself, or for a folder its init.lua (a package).
local function script_at(path)
  local loader = require("kloop.search.loader")
  if loader.is_dir(path) then
    local init = path:gsub("/+$", "") .. "/init.lua"
    if loader.is_file(init) then return init end
    return nil
  end
  if util.file_exists(path) then return path end
end

-- The folders a bare strategy name is looked up in, in order: {dir, label} each.
function M.strategy_dirs()
  local dirs = { { "strategies", "./strategies" } }
  for dir in (os.getenv("KLOOP_PATH") or ""):gmatch("[^:]+") do dirs[#dirs + 1] = { dir, "KLOOP_PATH" } end
  local native = require("kloop.native")
  if native.source_dir ~= "" then dirs[#dirs + 1] = { native.source_dir .. "/strategies", "built-in" } end
  return dirs
end

-- Finds a script: a path as given (a folder: its init.lua), or a bare name in
-- strategies/, $KLOOP_PATH and the built-ins, as NAME.lua, then NAME (NAME/init.lua
-- when it is a folder: a strategy package).
function M.resolve_script(name)
  local tried = {}
  local function try(path)
    tried[#tried + 1] = path
    return script_at(path)
  end
  if name:find("/") or name:match("%.lua$") then
    local p = try(name)
    if p then return p end
    if not name:match("%.lua$") then
      p = try(name .. ".lua")
      if p then return p end
    end
    return nil, string.format("no script %s (tried: %s)", name, table.concat(tried, ", "))
  end
  local p = try(name)
  if p then return p end
  for _, d in ipairs(M.strategy_dirs()) do
    local dir = d[1]
    p = try(dir .. "/" .. name .. ".lua") or try(dir .. "/" .. name) -- (a folder: its init.lua)
    if p then return p end
  end
  return nil, string.format("no script named '%s' (tried: %s); set KLOOP_PATH to add folders",
    name, table.concat(tried, ", "))
end

local function run_chunk(chunk, args)
  _G.kloop = require("kloop")
  return M.protect(chunk, unpack(args or {}))
end

local function main(argv)
  local i = 1
  local chunks, interactive, script, quiet = {}, false, nil, false
  local rest = {}
  local cmd = argv[1]
  if cmd == "tune" then
    -- `kloop tune TASK --space` only counts the space: no strategy, no worker, no GPU
    for k = 2, #argv do
      if argv[k] == "--" then break end
      if argv[k] == "--space" then cmd = "space" break end
    end
  end
  if cmd and M.command_modules[cmd] then
    local mod = require(M.command_modules[cmd])
    local sub = {}
    for k = 2, #argv do sub[#sub + 1] = argv[k] end
    local ok, rc = M.protect(mod.main, sub)
    if not ok then return 1 end
    return rc or 0
  end
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      io.stdout:write(M.usage_text)
      return 0
    elseif a == "--version" then
      return require("kloop.cli.version").main({})
    elseif a == "--worker" then
      return require("kloop.worker.main").main({ unpack(argv, i + 1) })
    elseif a == "--worker-remote" then
      return require("kloop.worker.remote").main({ unpack(argv, i + 1) })
    elseif a == "-e" then
      if not argv[i + 1] then return usage_error("-e needs a Lua chunk") end
      chunks[#chunks + 1] = argv[i + 1]
      i = i + 1
    elseif a == "-i" then
      interactive = true
    elseif a == "-q" or a == "--quiet" then
      quiet = true
    elseif a == "--" then
      for k = i + 1, #argv do rest[#rest + 1] = argv[k] end
      break
    elseif a == "-" or a:sub(1, 1) ~= "-" then
      script = a
      for k = i + 1, #argv do
        if argv[k] ~= "--" then rest[#rest + 1] = argv[k] end
      end
      break
    else
      return usage_error("unknown option " .. a)
    end
    i = i + 1
  end
  _G.kloop = require("kloop")
  kloop.quiet = quiet

  for _, c in ipairs(chunks) do
    local fn, err = loadstring(c, "=(command line)")
    if not fn then return report(err) end
    if not run_chunk(fn) then return 1 end
  end

  if script then
    local path = script
    if script ~= "-" then
      local p, err = M.resolve_script(script)
      if not p then util.eprintf("kloop: %s\n", err) return 1 end
      path = p
    end
    local loader = require("kloop.search.loader")
    -- the strategy's folder is its module path; what it loads is recorded (a package)
    local fn, pkg = loader.load(path)
    if not fn then return report(pkg) end
    -- arg follows the luajit convention: arg[0] is the script, arg[1..] what follows it.
    local arg = { [0] = path }
    for k, v in ipairs(rest) do arg[k] = v end
    _G.arg = arg
    local ok, res = run_chunk(fn, rest)
    if not ok then return 1 end
    -- A script that returns a table of hooks is a strategy: the driver runs it.
    if type(res) == "table" and type(res.propose) == "function" then
      loader.adopt(res, pkg)
      local fits, why = loader.check_requires(res.requires, kloop.api_version, path)
      if not fits then util.eprintf("kloop: %s\n", why) return 1 end
      -- a Ctrl-C landing between the driver's own protected sections still ends cleanly
      local okr, rc = pcall(require("kloop.search.driver").run, res, path, rest)
      if not okr then
        if sys.is_interrupt(rc) then
          util.eprintf("kloop: interrupted\n")
          local signo = sys.interrupt_signal()
          return signo > 0 and 128 + signo or 130
        end
        error(rc, 0)
      end
      if interactive then return require("kloop.cli.repl").main() end
      return rc
    end
    if interactive then return require("kloop.cli.repl").main() end
    if type(res) == "number" then return res end
    return 0
  end

  if interactive or (#chunks == 0 and sys.isatty(0)) then
    return require("kloop.cli.repl").main()
  end
  if #chunks == 0 then
    -- stdin is not a terminal: run it as a script, like luajit does.
    local fn, err = loadstring(io.stdin:read("*a"), "=stdin")
    if not fn then return report(err) end
    _G.arg = { [0] = "-" }
    if not run_chunk(fn) then return 1 end
  end
  return 0
end

-- The command line's exit code. KLOOP_LUAPROF=FILE (benches): the driver's CPU time by
-- function, sampled, written to FILE at the end (kloop.cli.luaprof; not in a worker).
function M.main(argv)
  local path = os.getenv("KLOOP_LUAPROF")
  if not path or path == "" or argv[1] == "--worker" or argv[1] == "--worker-remote" then return main(argv) end
  local luaprof = require("kloop.cli.luaprof")
  -- (kloop's own children, a library's timing child, are not profiled into the same file)
  sys.env_scrub("KLOOP_LUAPROF")
  local p = luaprof.start(path)
  local ok, rc = pcall(main, argv)
  luaprof.stop(p)
  if not ok then error(rc, 0) end
  return rc
end

-- Subcommands: name -> module with main(args) returning an exit code.
M.command_modules = {
  doctor = "kloop.cli.doctor",
  version = "kloop.cli.version",
  compile = "kloop.cli.compile",
  check = "kloop.cli.check",
  profile = "kloop.cli.profile",
  runs = "kloop.cli.runs",
  show = "kloop.cli.show",
  best = "kloop.cli.best",
  diff = "kloop.cli.diff",
  export = "kloop.cli.export",
  replay = "kloop.cli.replay",
  space = "kloop.cli.space",
  ["import-kt"] = "kloop.cli.import_kt",
  report = "kloop.cli.report",
  audit = "kloop.cli.audit",
  mcp = "kloop.cli.mcp",
  promote = "kloop.cli.promote",
  strategies = "kloop.cli.strategies",
  ["strategy-files"] = "kloop.cli.strategy_files",
}

return M
