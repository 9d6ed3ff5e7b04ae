-- kloop.cli.compile: `kloop compile TARGET`: compile only (no GPU needed); log and resources.
local args = require("kloop.cli.args")
local taskmod = require("kloop.eval.task")
local compile = require("kloop.eval.compile")
local util = require("kloop.util")
local plan = require("kloop.eval.plan")
local cjson = require("cjson")

local M = {}

M.usage = [[
usage: kloop compile TARGET [--candidate FILE] [--arch sm_90] [--params K=V,...] [--json]
                     [--all-sizes]

Compiles the task's kernel (or FILE) with NVRTC to a cubin for ARCH (default sm_90),
or, for a .c task, with the system C compiler (cc, -O3 -march=native) to a shared object,
through the same include and option fences as an evaluation; prints the log and the
resource usage (registers, shared memory, stack, spills). Works without a GPU.
A task with its sizes compiled in (sizes_as_defines) is compiled at the bench size,
or with --all-sizes at every size, one binary each.
Exit: 0 compiled, 3 did not compile (or was rejected), 1 error, 2 bad usage.
]]
-- (The usage text is pinned by tests/cli/evaluate.t. Besides it: a CUDA kernel with
-- `// kloop: launch` comments gets its launch plan printed at each of the task's sizes,
-- or why it is refused, which is verdict launch_error and exit 3; --json always has
-- `launch`, the task's plan where there are no comments. docs/TASKS.md.)

-- The launch plan at each case of the task: {source, cases = {{label, size, kernels | error}}}.
-- Launch comments are only read (never run), so this is safe on any candidate.
local function launch_plans(task, src, defines)
  local own = plan.from_source(src, task.entry, defines)
  local out = { source = own and "launch comments" or "task", cases = {}, ok = true }
  for _, case in ipairs(taskmod.cases(task)) do
    local p, err
    if own then
      p, err = own(case.size)
    else
      local ok, v = pcall(plan.for_task, task, case.size, nil, defines)
      if ok then p = v else err = tostring(type(v) == "table" and (v.msg or v.message) or v) end
    end
    out.cases[#out.cases + 1] = { label = case.label, size = case.size, kernels = p, error = err }
    if not p then out.ok = false end
  end
  return out
end

local function size_text(size)
  local parts = {}
  for _, k in ipairs(util.sorted_keys(size)) do parts[#parts + 1] = k .. "=" .. tostring(size[k]) end
  return table.concat(parts, " ")
end

local function print_plans(lp)
  print("launch plan (from the kernel's launch comments):")
  local first_err, same = lp.cases[1].error, true
  for _, c in ipairs(lp.cases) do if c.error ~= first_err then same = false end end
  if first_err and same then print("  every size: refused: " .. first_err) return end
  for _, c in ipairs(lp.cases) do
    local head = string.format("  %s (%s):", c.label, size_text(c.size))
    if c.error then
      print(head .. " refused: " .. c.error)
    else
      for i, k in ipairs(c.kernels) do
        print(string.format("%s %s grid = {%d, %d, %d}, block = {%d, %d, %d}, smem = %d", i == 1 and head or
          string.rep(" ", #head), k.entry, k.grid[1], k.grid[2], k.grid[3], k.block[1], k.block[2], k.block[3], k.smem))
      end
    end
  end
end

-- " at bench (HEIGHT=8192 WIDTH=8192)": the case a binary of a task with its sizes
-- compiled in was built for ("" for other tasks).
local function at_text(task, case)
  if not case then return "" end
  local parts = {}
  for _, k in ipairs(task.sizes_as_defines) do parts[#parts + 1] = k .. "=" .. tostring(case.size[k]) end
  return string.format(" at %s (%s)", case.label, table.concat(parts, " "))
end

local function print_job(name, arch, job, verdict, at)
  print(string.format("%s: %s (%s, %.2f s%s)%s", name, verdict, arch, job.seconds or 0, job.cached and ", cached" or "", at))
  local log = job.rejected and job.log or compile.filter_log(job.log)
  if log ~= "" then print(log) end
  for _, e in ipairs(util.sorted_keys(job.lowered or {})) do print(string.format("  %s -> %s", e, job.lowered[e])) end
  for _, entry in ipairs(util.sorted_keys(job.resources or {})) do
    local r = job.resources[entry]
    print(string.format("  %s: %d registers, %d B static smem, %d B stack, spills %d B stores / %d B loads",
      entry, r.registers, r.static_smem, r.stack_bytes, r.spill_stores, r.spill_loads))
  end
end

function M.main(argv)
  local opts, pos = args.command("compile", argv, { ["--candidate"] = "value", ["--arch"] = "value", ["--json"] = "flag",
    ["--params"] = "value", ["--no-cache"] = "flag", ["--all-sizes"] = "flag" }, M.usage)
  if not opts then return pos end
  if #pos ~= 1 then return args.usage_error("compile", "give one TARGET", M.usage) end
  local task, err = taskmod.load(pos[1])
  if not task then util.eprintf("kloop compile: %s\n", err) return 1 end
  if opts.all_sizes and not task.sizes_as_defines then
    return args.usage_error("compile", "--all-sizes: " .. task.file .. " compiles no sizes in (sizes_as_defines)", M.usage)
  end
  local src, name = task.source, util.basename(task.kernel)
  if opts.candidate then
    src = util.read_file(opts.candidate)
    if not src then util.eprintf("kloop compile: cannot read candidate %s\n", opts.candidate) return 1 end
    name = util.basename(opts.candidate)
  end
  local defines, derr = args.defines(opts.params)
  if not defines then util.eprintf("kloop compile: --params: %s\n", derr) return 2 end
  -- a parameter the kernel does not #define itself gets its first value (a Kernel Tuner
  -- kernel has no defaults of its own); --params wins
  defines = taskmod.fill_defaults(task, src, defines)
  -- C++ entries (templates, no extern "C") are found through NVRTC's name expressions
  local entries = { task.entry }
  local okp, tp = pcall(plan.for_task, task, task.sizes.bench, nil, defines)
  if okp then for _, k in ipairs(tp) do entries[#entries + 1] = k.entry end end
  local compiler = task.backend == "host" and require("kloop.eval.compile_host") or compile
  local arch = task.backend == "host" and "host" or (opts.arch or "sm_90")
  -- sizes compiled in: the bench case, or every case (--all-sizes); otherwise one build
  local cases = { false }
  if task.sizes_as_defines then
    cases = {}
    for _, c in ipairs(taskmod.cases(task)) do if opts.all_sizes or c.bench then cases[#cases + 1] = c end end
  end
  local jobs = {}
  local unguarded = taskmod.unguarded_reason(task, src)
  for i, case in ipairs(cases) do
    local job = unguarded and { ok = false, rejected = true, log = unguarded, resources = {} }
      or compiler.compile(src, { arch = arch, dir = task.dir, options = task.options,
      defines = case and taskmod.size_defines(task, case.size, defines) or defines, name = name, no_cache = opts.no_cache,
      entries = task.backend ~= "host" and entries or nil })
    job.verdict = job.ok and "ok" or (job.rejected and "rejected" or "compile_error")
    jobs[i] = job
  end
  for _, job in ipairs(jobs) do
    -- (built, but kept nowhere: kloop's failure, not the kernel's)
    if job.cache_error then util.eprintf("kloop compile: %s\n", job.cache_error) return 1 end
  end
  local verdict = "ok"
  for _, job in ipairs(jobs) do if verdict == "ok" then verdict = job.verdict end end
  local job = jobs[#jobs]
  -- the host backend has no launch plan of its own (the evaluator ignores launch comments there)
  local lp = task.backend ~= "host" and launch_plans(task, src, defines) or nil
  if lp and not lp.ok and verdict == "ok" then verdict = "launch_error" end
  if opts.json then
    local launch
    if lp then
      launch = { source = lp.source, cases = {} }
      for i, c in ipairs(lp.cases) do
        launch.cases[i] = { label = c.label, size = c.size, kernels = c.kernels, error = c.error }
      end
    end
    local out = { verdict = verdict, log = job.rejected and job.log or compile.filter_log(job.log), resources = job.resources,
      seconds = job.seconds, cached = job.cached or false, cubin = job.cubin_path, launch = launch,
      lowered = job.lowered and next(job.lowered) and job.lowered or nil }
    if cases[1] then
      -- (the top-level fields are the last build's: the bench size)
      out.sizes = {}
      for i, c in ipairs(cases) do
        local j = jobs[i]
        out.sizes[i] = { label = c.label, size = c.size, verdict = j.verdict, cubin = j.cubin_path, cached = j.cached or false,
          seconds = j.seconds, log = j.verdict ~= "ok" and (j.rejected and j.log or compile.filter_log(j.log)) or nil }
      end
    end
    print(cjson.encode(out))
  else
    for i, case in ipairs(cases) do
      -- (a binary that built but whose launch comments are refused: launch_error, as --json says)
      local v = jobs[i].verdict == "ok" and verdict == "launch_error" and verdict or jobs[i].verdict
      print_job(name, arch, jobs[i], v, at_text(task, case or nil))
    end
    -- text shows the candidate's own plan; the task's is in --json (and in the sidecar)
    if lp and lp.source ~= "task" then print_plans(lp) end
  end
  return verdict == "ok" and 0 or 3
end

return M
