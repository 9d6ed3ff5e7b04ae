-- kloop: the documented module every strategy and REPL session uses.
local kloop = {}

kloop.api_version = 1

local lazy = {
  core = "kloop.core.api", util = "kloop.util", doctor = "kloop.cli.doctor",
  tune = "kloop.search.tune", proposers = "kloop.search.proposers", rng = "kloop.search.rng", stats = "kloop.eval.stats",
  llm = "kloop.llm.session", prompt = "kloop.llm.prompt", store = "kloop.store.db",
}

setmetatable(kloop, {
  __index = function(t, k)
    local mod = lazy[k]
    if mod then
      local v = require(mod)
      rawset(t, k, v)
      return v
    end
  end,
})

-- Loads a task from its kernel or sidecar path: task, or nil, message.
function kloop.load_task(path)
  return require("kloop.eval.task").load(path)
end

-- An evaluator for a task (starts its GPU worker on first use); see docs/LUA_API.md.
function kloop.evaluator(task, opts)
  if type(task) == "string" then
    local t, err = kloop.load_task(task)
    if not t then return nil, err end
    task = t
  end
  return require("kloop.eval.evaluator").new(task, opts)
end

-- Profiles a task's kernel (or opts.candidate: a source text) on the GPU: evaluates it,
-- then collects CUPTI counters; returns the evaluation result with .profile (the
-- summary) and .profile_text (what `kloop profile` prints), or nil, message.
function kloop.profile(task, opts)
  opts = opts or {}
  local ev, err = kloop.evaluator(task, { device = opts.device, timing = opts.timing })
  if not ev then return nil, err end
  local r, p = ev:evaluate_and_profile(opts.candidate, { defines = opts.defines, metrics = opts.metrics })
  ev:close()
  if not p then return r end
  if p.verdict ~= "ok" then return nil, p.reason end
  r.profile_text = require("kloop.eval.profile").text(r.profile, r.profile.metric_names)
  return r
end

-- Compiles a source for an arch without a GPU: the compile job table.
function kloop.compile(src, opts)
  return require("kloop.eval.compile").compile(src, opts or {})
end

function kloop.help()
  print([[kloop module (api_version ]] .. kloop.api_version .. [[):
  kloop.load_task(path)           -> task | nil, err
  kloop.evaluator(task, opts)     -> ev  (ev:evaluate(src, {defines=}), ev:compare(a, b),
                                     ev:profile(src, {metrics=}), ev:close())
  kloop.profile(task, {candidate=, metrics=}) -> result with .profile, .profile_text
  kloop.compile(src, {arch=, dir=, defines=, options=}) -> job (ok, log, resources, cubin_path)
  kloop.core.gpu_probe()          -> GPU facts (from a child process)
See docs/LUA_API.md.]])
end

function kloop.version()
  return require("kloop.core.ffi").version()
end

return kloop
