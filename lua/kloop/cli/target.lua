-- kloop.cli.target: what the commands that evaluate share (check, profile, replay): the
-- evaluator's options, loading the task, the GPU they need, one evaluation.
local args = require("kloop.cli.args")
local util = require("kloop.util")

local M = {}

-- The options of every evaluating command: --budget bounds the timing loop, --deadline
-- one evaluation, --device picks the GPU; --json for scripts.
M.OPTIONS = { ["--budget"] = "number", ["--deadline"] = "number", ["--device"] = "number", ["--json"] = "flag" }

-- M.OPTIONS plus the command's own option kinds.
function M.options(extra)
  local spec = {}
  for k, v in pairs(M.OPTIONS) do spec[k] = v end
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

-- The task at path; or nil, exit code 1 after saying why (hint, if any, appended).
function M.load_task(cmd, path, hint)
  local task, err = require("kloop.eval.task").load(path)
  if not task then
    util.eprintf("kloop %s: %s%s\n", cmd, err, hint or "")
    return nil, 1
  end
  return task
end

-- Nil when the task can run here: a host task, or a CUDA task with a GPU at opts.device;
-- otherwise exit code 1 after saying "no GPU here (why); " and advice.
function M.need_gpu(cmd, task, opts, advice)
  if task.backend ~= "cuda" then return nil end
  local gpu, gerr = require("kloop.core.gpu").probe(opts.device or 0)
  if gpu then
    M.probed = { device = opts.device or 0, gpu = gpu }
    return nil
  end
  util.eprintf("kloop %s: no GPU here (%s); %s\n", cmd, gerr, advice)
  return 1
end

-- The evaluator for task with the command's options (timing budget default_budget seconds
-- unless --budget). The caller closes it.
function M.evaluator(task, opts, default_budget)
  -- (gpu_hint: need_gpu's probe of the same device, so the first compiles start before the worker's hello)
  local p = M.probed
  return require("kloop.eval.evaluator").new(task, { deadline = opts.deadline, device = opts.device,
    gpu_hint = p and p.device == (opts.device or 0) and p.gpu or nil, timing = { budget = opts.budget or default_budget } })
end

-- One evaluation of src (nil: the task's kernel) with {defines, name}, timed for 2 s
-- unless --budget: the result, or nil, exit code 1 after saying why the evaluation
-- could not run (a worker or infrastructure failure, not a verdict).
function M.evaluate(cmd, task, opts, src, eopts)
  local ev = M.evaluator(task, opts, 2.0)
  local r = ev:evaluate(src, eopts)
  ev:close()
  if r.infrastructure then
    util.eprintf("kloop %s: %s\n", cmd, r.reason)
    return nil, 1
  end
  return r
end

-- An evaluation result as JSON (samples always a list).
function M.result_json(r)
  r.samples = r.samples or {}
  return require("cjson").encode(r)
end

-- What check and profile share: the options, the task, the candidate, --params and
-- the GPU. cmd: "check" or "profile"; extra: more option kinds; hooks.options(opts)
-- and hooks.task(task, target) may refuse with an exit code (having said why).
-- Returns {opts, task, src, name, defines}, or nil, exit code.
function M.load(cmd, argv, usage, extra, hooks)
  hooks = hooks or {}
  local spec = M.options(extra)
  spec["--candidate"], spec["--params"] = "value", "value"
  local opts, pos = args.command(cmd, argv, spec, usage)
  if not opts then return nil, pos end
  if #pos ~= 1 then return nil, args.usage_error(cmd, "give one TARGET", usage) end
  local code = hooks.options and hooks.options(opts)
  if code then return nil, code end
  local task, terr = M.load_task(cmd, pos[1])
  if not task then return nil, terr end
  code = hooks.task and hooks.task(task, pos[1])
  if code then return nil, code end
  local src, name = nil, util.basename(task.kernel)
  if opts.candidate then
    src = util.read_file(opts.candidate)
    if not src then util.eprintf("kloop %s: cannot read candidate %s\n", cmd, opts.candidate) return nil, 1 end
    name = opts.candidate
  end
  local defines, derr = args.defines(opts.params)
  if not defines then util.eprintf("kloop %s: --params: %s\n", cmd, derr) return nil, 2 end
  code = M.need_gpu(cmd, task, opts, string.format("`kloop compile %s` works without one", pos[1]))
  if code then return nil, code end
  return { opts = opts, task = task, src = src, name = name, defines = defines }
end

return M
