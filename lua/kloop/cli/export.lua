-- kloop.cli.export: `kloop export ID -o DIR`: a candidate's kernel with a provenance
-- header, its launch plan as a C header, and provenance.json.
local common = require("kloop.cli.store_common")
local args = require("kloop.cli.args")
local util = require("kloop.util")
local store = require("kloop.store.db")
local cjson = require("cjson")

local M = {}

M.usage = common.usage([[
usage: kloop export CANDIDATE -o DIR [--force] [--db PATH] [--json]

Writes into DIR: kernel.cu (or .c) with a provenance header (and the candidate's
parameters as #defines), launch_plan.h (the launch plan at the task's bench size
as C constants, and the plan as JSON), and provenance.json, both with the
promotion's evidence. Only a promoted candidate is exported (kloop promote ID,
docs/PROMOTION.md); --force exports another, and says so in both files.
]])

local fmt_ms = util.fmt_ms
local promotion_of

-- The launch plan at the bench size: the stored one, else from the task on disk.
-- Returns plan, size, where it came from (or nil, nil, why there is none).
local function bench_plan(c, run)
  local p = c.launch_plan
  if type(p) == "table" then
    if p.bench then return p.bench, p.size, "the plan recorded with the candidate" end
    if p[1] or p.grid then return p, nil, "the plan recorded with the candidate" end
  end
  if not run.task_path then return nil, nil, "the run has no task path" end
  local task, err = require("kloop.eval.task").load(run.task_path)
  if not task then return nil, nil, "the task could not be loaded here: " .. err end
  local plan = require("kloop.eval.plan")
  local size = task.sizes.bench
  local own = plan.from_source(c.source, task.entry, c.params)
  if own then
    local pl, perr = own(size)
    if pl then return pl, size, "from the candidate's launch comments" end
    return nil, nil, "its launch comments fail at the bench size: " .. tostring(perr)
  end
  local ok, pl = pcall(plan.for_task, task, size)
  if ok then return pl, size, "from the task's launch function" end
  return nil, nil, "the task's launch function fails at the bench size"
end

local function c_ident(s)
  return (tostring(s or "kernel"):gsub("[^%w_]", "_"))
end

-- Everything known about where candidate c came from, for provenance.json.
local function provenance(c, run, lineage)
  local e = c.evaluation or {}
  local chain = {}
  for i, a in ipairs(lineage) do
    chain[i] = { id = a.id, depth = a.depth, proposer = a.proposer, model = a.model, parents = a.parents,
      verdict = a.verdict, median_ms = a.median_ms }
  end
  return {
    candidate = c.id, run = c.run_id, name = c.name, task = run.task_name, task_path = run.task_path,
    source_hash = c.source_hash, params = c.params, launch_plan = c.launch_plan, parents = c.parents,
    proposer = c.proposer, model = c.model, prompt_id = c.prompt_id, prompt_hash = c.prompt_hash,
    sampling = c.sampling, llm_seed = c.llm_seed, tokens_in = c.tokens_in, tokens_out = c.tokens_out,
    cost_usd = c.cost_usd, created_at = c.created_at,
    strategy = run.strategy_path, strategy_hash = run.strategy_hash, run_seed = run.seed,
    kloop_version = run.kloop_version, hostname = run.hostname, gpu_name = run.gpu_name, gpu_arch = run.gpu_arch,
    driver_version = run.driver_version, cuda_version = run.cuda_version, nvrtc_version = run.nvrtc_version,
    evaluation = c.evaluation and {
      verdict = e.verdict, reason = e.reason, median_ms = e.median_ms, ci_ms = e.ci_ms, min_ms = e.min_ms,
      spread = e.spread, reps = e.reps, tflops = e.tflops, gbps = e.gbps, frac_peak = e.frac_peak, bound = e.bound,
      gpu = e.gpu, arch = e.arch, resources = e.resources, created_at = e.created_at, stage = e.stage,
    } or nil,
    baseline_ms = run.baseline_ms,
    speedup = common.speedup(run, e),
    lineage = store.array(chain),
  }
end

-- The kernel file: a provenance header, the parameters as #defines (so it compiles as
-- is), then the source.
local function kernel_text(c, run, prov)
  local e = c.evaluation or {}
  local h = {}
  h[#h + 1] = string.format("// kloop export: candidate %d of run %d, task %s (%s)", c.id, c.run_id,
    run.task_name or "?", run.task_path or "?")
  h[#h + 1] = "// proposed by " .. table.concat(common.proposed_by(c), ", ")
  if #c.parents > 0 then h[#h + 1] = "// parents " .. table.concat(common.parent_refs(c.parents), ", ") end
  if e.verdict then
    h[#h + 1] = string.format("// verdict %s, median %s (95%% CI %s .. %s)%s on %s %s", e.verdict, fmt_ms(e.median_ms),
      fmt_ms(e.ci_lo_ms), fmt_ms(e.ci_hi_ms),
      prov.speedup and (", " .. util.fmt_x(prov.speedup) .. " the baseline,") or "", e.gpu or "?", e.arch or "")
    if e.stage == "screened" then
      h[#h + 1] = "// screened only (one check size, one input set, a few timed runs): not fully evaluated"
    end
  else
    h[#h + 1] = "// not evaluated"
  end
  local pr = prov.promotion or {}
  if pr.state == "promoted" then
    h[#h + 1] = string.format("// %s", pr.summary)
    for _, st in ipairs(pr.steps or {}) do
      h[#h + 1] = string.format("//   %s %s: %s", st.step, st.status, tostring(st.reason or ""):gsub("\n", " "))
    end
  else
    h[#h + 1] = "// exported WITHOUT promotion (--force): " .. tostring(pr.summary or "not promoted")
  end
  h[#h + 1] = string.format("// source hash %s, kloop %s, strategy %s; full provenance in provenance.json",
    c.source_hash, run.kloop_version or "?", run.strategy_path or "-")
  if type(c.params) == "table" and next(c.params) then
    h[#h + 1] = "// the candidate's parameters (it was compiled with -D for each)"
    for _, k in ipairs(util.sorted_keys(c.params)) do
      h[#h + 1] = string.format("#ifndef %s\n#define %s %s\n#endif", k, k, tostring(c.params[k]))
    end
  end
  return table.concat(h, "\n") .. "\n" .. c.source
end

-- launch_plan.h: the plan's constants at the bench size (general plans are Lua
-- functions, so only this one size is written), and the plan as JSON.
local function plan_header(c, run, plan, size, origin)
  local guard = "KLOOP_C" .. c.id .. "_LAUNCH_PLAN_H"
  local pre = "kloop_c" .. c.id
  local L = {}
  L[#L + 1] = string.format("/* launch_plan.h: launch plan of kloop candidate %d (task %s)%s. */", c.id,
    run.task_name or "?", size and " at the task's bench size" or "")
  L[#L + 1] = "#ifndef " .. guard
  L[#L + 1] = "#define " .. guard
  if size then
    L[#L + 1] = "/* bench size */"
    for _, k in ipairs(util.sorted_keys(size)) do
      L[#L + 1] = string.format("#define %s_%s %s", pre:upper(), c_ident(k), tostring(size[k]))
    end
  end
  if plan then
    L[#L + 1] = string.format("/* %s; kernels run in this order */", origin)
    L[#L + 1] = "typedef struct { const char *entry; unsigned grid[3]; unsigned block[3]; unsigned smem; } " .. pre .. "_launch;"
    L[#L + 1] = string.format("static const %s_launch %s_plan[] = {", pre, pre)
    for _, l in ipairs(plan) do
      local g, b = l.grid or {}, l.block or {}
      L[#L + 1] = string.format('  { "%s", { %d, %d, %d }, { %d, %d, %d }, %d },', tostring(l.entry or "?"),
        g[1] or 1, g[2] or 1, g[3] or 1, b[1] or 1, b[2] or 1, b[3] or 1, l.smem or 0)
    end
    L[#L + 1] = "};"
    L[#L + 1] = string.format("enum { %s_PLAN_COUNT = %d };", pre:upper(), #plan)
  else
    L[#L + 1] = "/* no launch plan was recorded, and " .. tostring(origin):gsub("%*/", "* /") .. " */"
  end
  L[#L + 1] = "/* as JSON: " .. common.json(plan or c.launch_plan or cjson.null):gsub("%*/", "* /") .. " */"
  L[#L + 1] = "#endif"
  return table.concat(L, "\n") .. "\n"
end

-- The candidate's promotion evidence for the files: {state, summary, id, ratio,
-- ratio_ci, incumbent_id, reason, steps, hidden_sizes, sanitizer, seconds}; or nil
-- after saying why the store could not be read.
promotion_of = function(c, opts)
  local db = common.open_db("export", opts)
  if not db then return nil end
  local summary, p = common.promotion_state(db, c.id)
  local out = { state = p and p.state or "none", summary = summary }
  if p then
    out.id, out.ratio, out.ratio_ci, out.incumbent_id, out.reason = p.id, p.ratio, p.ratio_ci, p.incumbent_id, p.reason
    out.seconds, out.gpu, out.started_at, out.ended_at = p.seconds, p.gpu, p.started_at, p.ended_at
    local ev = type(p.evidence) == "table" and p.evidence or {}
    out.hidden_sizes, out.sanitizer = ev.hidden_sizes, ev.sanitizer
    out.steps = store.array({})
    for i, st in ipairs(p.steps or {}) do
      out.steps[i] = { step = st.step, status = st.status, reason = st.reason, seconds = st.seconds, evidence = st.evidence }
    end
  end
  db:close()
  return out
end

function M.main(argv)
  local opts, pos = common.parse("export", argv, M.usage,
    { ["-o"] = "value", ["--output"] = "value", ["--force"] = "flag" })
  if not opts then return pos end
  local dir = opts.o or opts.output
  if #pos ~= 1 then return args.usage_error("export", "give one candidate id", M.usage) end
  if not dir then return args.usage_error("export", "give the output folder with -o DIR", M.usage) end
  local c, run, lineage = common.stored_candidate("export", opts, pos[1], M.usage, "export takes a candidate id", true)
  if not c then return run end
  local promotion = promotion_of(c, opts)
  if not promotion then return 1 end
  if promotion.state ~= "promoted" and not opts.force then
    local why = promotion.state == "none" and "" or (" (" .. promotion.summary .. ")")
    return common.say_error("export", string.format("c:%d is not promoted%s: run `kloop promote %d` first,"
      .. " or give --force to export it anyway (the files then say so)", c.id, why, c.id))
  end
  if not util.mkdir_p(dir) then return common.say_error("export", "cannot create " .. dir) end
  local prov = provenance(c, run, lineage)
  prov.promotion = promotion
  if promotion.state ~= "promoted" then prov.exported_without_promotion = "exported WITHOUT promotion (--force)" end
  local ext = (run.task_path and run.task_path:match("%.c$")) and "c" or "cu"
  local plan, size, origin = bench_plan(c, run)
  prov.bench_size = size
  prov.bench_plan = plan
  local files = {
    { dir .. "/kernel." .. ext, kernel_text(c, run, prov) },
    { dir .. "/launch_plan.h", plan_header(c, run, plan, size, origin) },
    { dir .. "/provenance.json", common.json(prov) .. "\n" },
  }
  local paths = {}
  for i, f in ipairs(files) do
    local ok, werr = util.write_file(f[1], f[2])
    if not ok then return common.say_error("export", "cannot write " .. f[1] .. ": " .. tostring(werr)) end
    paths[i] = f[1]
  end
  if opts.json then
    print(common.json({ candidate = c.id, files = paths }))
  else
    print(string.format("c:%d -> %s, %s, %s", c.id, paths[1], paths[2], paths[3]))
  end
  return 0
end

return M
