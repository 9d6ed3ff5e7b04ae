-- tests/spec/support/sim_evaluator.lua: a test double of kloop.eval.evaluator over the sim
-- backend, so the search driver and promotion run in CI without a GPU or a compiler. It
-- is a real Evaluator (the spec from the secret, start, deadlines, verdicts, compare,
-- the sentinel) with four methods replaced: spawn starts an in-process worker (a fresh
-- copy of kloop.worker.main and kloop.worker.protocol in a coroutine, talking framed
-- JSON as the real one does over fds 3/4), compile_source writes a candidate's source
-- (the Lua text of a sim module) to a file whose path is the "cubin", precompile does
-- nothing and floor_ms gives no physical floor (the sim machine has no datasheet).
-- The sim machine's clock counts the Lua VM instructions of a timed launch (the JIT off
-- for it), so a time is a property of the code: the same code times the same, always.
local cjson = require("cjson")
local util = require("kloop.util")
local sys = require("kloop.core.sys")
local evaluator = require("kloop.eval.evaluator")
local taskmod = require("kloop.eval.task")
local sim = require("tests.spec.support.backend_sim")

local M = {}

-- One instruction of the sim machine costs this much (ms = instructions * NS * 1e-6).
M.NS_PER_INSTRUCTION = 1

---------------------------------------------------------------------------
-- The sim machine: backend_sim with the instruction clock.

local machine = setmetatable({}, { __index = sim })
M.machine = machine
local counted = 0
local function tick() counted = counted + 1 end

function machine.timer_start()
  collectgarbage("collect")
  sim.timing = true
  counted = 0
  return true
end
function machine.timer_stop() sim.timing = false return true end
function machine.timer_read() return counted * M.NS_PER_INSTRUCTION * 1e-6 end

-- An untimed launch is backend_sim's; a timed one runs interpreted under a count hook
-- (compiled traces are not counted), which is removed whatever the kernel does.
function machine.launch(fn, grid, block, smem, params)
  if not sim.timing then return sim.launch(fn, grid, block, smem, params) end
  jit.off(fn, true)
  debug.sethook(tick, "", 1)
  local r = { pcall(sim.launch, fn, grid, block, smem, params) }
  debug.sethook()
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, 4)
end

---------------------------------------------------------------------------
-- The in-process worker: kloop.worker.main, loaded afresh with its own protocol state
-- (as a new process has), over a channel that is a coroutine: chan_recv yields to the
-- parent until the next request, chan_send leaves the reply in the worker's outbox.

local outbox = setmetatable({}, { __mode = "k" })
local chan = {
  chan_recv = function() return coroutine.yield() end,
  chan_send = function(_, s) outbox[coroutine.running()] = s return true end,
}

local function fresh_main()
  local names = { "kloop.worker.main", "kloop.worker.protocol", "kloop.core.proc" }
  local saved = {}
  for i, n in ipairs(names) do saved[i] = package.loaded[n] end
  package.loaded["kloop.worker.main"], package.loaded["kloop.worker.protocol"] = nil, nil
  package.loaded["kloop.core.proc"] = chan
  local ok, main = pcall(require, "kloop.worker.main")
  for i, n in ipairs(names) do package.loaded[n] = saved[i] end
  if not ok then error(main, 0) end
  return main
end

-- cjson's options are process-wide: the worker runs with its own (what kloop.worker.main
-- sets: sparse arrays, NaN and Inf in evidence), the parent keeps its own.
local function as_worker(fn)
  local sparse = { cjson.encode_sparse_array() }
  local invalid = cjson.encode_invalid_numbers()
  cjson.encode_sparse_array(true)
  cjson.encode_invalid_numbers(true)
  local r = { fn() }
  cjson.encode_sparse_array(unpack(sparse))
  cjson.encode_invalid_numbers(invalid)
  return unpack(r)
end

local Worker = {}
Worker.__index = Worker

local function new_worker()
  local main = fresh_main()
  local w = setmetatable({ exited = false }, Worker)
  w.co = coroutine.create(function() return main.main({ "sim" }) end)
  -- up to its first chan_recv; `--worker sim` loads kloop.worker.backend_sim before it
  package.loaded["kloop.worker.backend_sim"] = machine
  w:resume()
  package.loaded["kloop.worker.backend_sim"] = nil
  return w
end

function Worker:resume(msg)
  local ok, err = as_worker(function() return coroutine.resume(self.co, msg) end)
  if not ok then self.exited, self.crash = true, tostring(err) end
  if coroutine.status(self.co) == "dead" then self.exited = true end
end

-- The Proc methods the evaluator uses (kloop.core.proc): send, recv, tail, kill, close.
function Worker:send(s)
  if self.exited then return nil, "the sim worker has exited" .. (self.crash and (": " .. self.crash) or "") end
  self:resume(s)
  return true
end
function Worker:recv()
  local reply = outbox[self.co]
  outbox[self.co] = nil
  if reply then return reply end
  return nil, "error", "the sim worker ended without a reply" .. (self.crash and (": " .. self.crash) or "")
end
function Worker:tail() return self.crash or "" end
function Worker:kill() self.exited = true end
function Worker:close() self.exited = true return true end

---------------------------------------------------------------------------
-- The evaluator.

local Sim = {}

-- The "cubins": one content-addressed folder for the process (like kloop's cubin cache),
-- removed with its files when the Lua state closes.
local modules = { paths = {} }
local function module_dir()
  if modules.dir then return modules.dir end
  local dir = os.tmpname()
  os.remove(dir)
  assert(util.mkdir_p(dir))
  modules.dir = dir
  modules.sweeper = newproxy(true)
  getmetatable(modules.sweeper).__gc = function()
    for p in pairs(modules.paths) do os.remove(p) end
    os.remove(dir)
  end
  return dir
end

function Sim:backend() return "sim" end

-- A worker under a prefix (compute-sanitizer: kloop.eval.sanitize) cannot be had here:
-- the sanitizer step then skips, as it does where the tool is missing.
function Sim:spawn()
  if self.opts.worker_prefix then
    return nil, "the sim evaluator runs no worker under " .. tostring(self.opts.worker_prefix[1])
  end
  self.proc = new_worker()
  self.workers = (self.workers or 0) + 1
  return true
end

-- "Compiling" a sim module: it must load as Lua; the file is the image the worker loads.
-- With sizes compiled in (opts.case: kloop.eval.evaluator's compile_all), the module
-- sees its defines (the point's and the case's sizes) as the local table KLOOP_DEFINES,
-- set on its first line (line numbers stay). A module written before is "cached"; M.compiles
-- counts the others.
M.compiles = 0
function Sim:compile_source(src, opts)
  local t0 = sys.now()
  local chunk, err = loadstring(src, "=candidate")
  if not chunk then return { ok = false, log = err, seconds = sys.now() - t0 } end
  if opts and opts.case then
    local _, copts = self:compiler(opts, src)
    local parts = {}
    for _, k in ipairs(util.sorted_keys(copts.defines or {})) do
      parts[#parts + 1] = string.format("[%q] = %s", k, tonumber(copts.defines[k]) or string.format("%q", copts.defines[k]))
    end
    src = "local KLOOP_DEFINES = {" .. table.concat(parts, ", ") .. "}; " .. src
  end
  local path = string.format("%s/%s.lua", module_dir(), sys.content_hash(src))
  if modules.paths[path] then return { ok = true, cubin_path = path, seconds = sys.now() - t0, cached = true } end
  local ok, werr = util.write_file(path, src)
  if not ok then return { ok = false, log = "cannot write " .. path .. ": " .. tostring(werr) } end
  modules.paths[path] = true
  M.compiles = M.compiles + 1
  return { ok = true, cubin_path = path, seconds = sys.now() - t0, cached = false }
end

function Sim:precompile() end

-- No floor: the sim machine has no peak rates (the host backend has none either).
function Sim:floor_ms(defines) return nil, self:cost(self.task.sizes.bench, defines), nil end

-- A real evaluator of task (opts as kloop.eval.evaluator.new's) whose worker is in-process.
function M.new(task, opts)
  local ev = evaluator.new(task, opts)
  local cls = setmetatable({}, { __index = getmetatable(ev) })
  cls.__index = cls
  for k, fn in pairs(Sim) do cls[k] = fn end
  return setmetatable(ev, cls)
end

-- kloop.eval.evaluator with new = M.new (its other names are the real module's), for
-- code that requires the evaluator itself (M.require_with).
M.module = setmetatable({ new = M.new }, { __index = evaluator })

-- A task sidecar loaded by kloop.eval.task; its kernel is a sim module (declared in a
-- comment as `__global__ void entry(...)`, so the sidecar's arguments are checked
-- against it), and the task's backend is "sim".
function M.load_task(path)
  local task, err = taskmod.load(path)
  if not task then return nil, err end
  task.backend = "sim"
  return task
end

M.task_module = setmetatable({ load = M.load_task }, { __index = taskmod })

-- Requires module `name` afresh with the sim evaluator and task loader in place of the
-- real ones (package.loaded, restored afterwards): the seam for kloop.search.driver.
function M.require_with(name)
  local swap = { ["kloop.eval.evaluator"] = M.module, ["kloop.eval.task"] = M.task_module, [name] = false }
  local saved = {}
  for n, v in pairs(swap) do
    saved[n] = package.loaded[n]
    package.loaded[n] = v or nil
  end
  local ok, mod = pcall(require, name)
  for n in pairs(swap) do package.loaded[n] = saved[n] end
  if not ok then error(mod, 0) end
  return mod
end

-- Calls fn(...) with the sim evaluator as kloop.eval.evaluator: kloop.eval.promote and
-- kloop.eval.sanitize require it when they make an evaluator (a fresh worker, the hidden
-- sizes, each sanitizer tool), so a promotion runs on the sim backend throughout.
function M.with_evaluator(fn, ...)
  local saved = package.loaded["kloop.eval.evaluator"]
  package.loaded["kloop.eval.evaluator"] = M.module
  local r = { pcall(fn, ...) }
  package.loaded["kloop.eval.evaluator"] = saved
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, table.maxn(r))
end

return M
