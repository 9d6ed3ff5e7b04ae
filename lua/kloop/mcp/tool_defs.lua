-- kloop.mcp.tool_defs: the tools' definitions: names, descriptions, input and output
-- JSON Schemas (what tools/list shows and what kloop.mcp.schema checks calls against).
local json = require("kloop.mcp.json")

local M = {}

-- What a call may send and what a result may hold (docs/AGENTS.md).
M.LIMITS = { source_bytes = 256 * 1024, text_bytes = 8192, history = 200, history_default = 50, defines = 64,
  budget_s = 30 }

local L = M.LIMITS
local array = json.array

local function obj(props, required, extra)
  local s = { type = "object", properties = props, additionalProperties = false }
  if required then s.required = array(required) end
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

local DEFINES = { type = "object", maxProperties = L.defines,
  description = "preprocessor defines (-DNAME=VALUE) for the candidate, e.g. {\"BM\": 64}",
  propertyNames = { pattern = "^[A-Za-z_][A-Za-z0-9_]*$" },
  additionalProperties = { type = { "string", "number", "boolean" }, maxLength = 256 } }

-- How a call names a candidate: its source, or a recorded candidate's id; neither is
-- the task's own kernel.
local function candidate_props(extra)
  local p = {
    source = { type = "string", maxLength = L.source_bytes, minLength = 1,
      description = "the candidate's full source (a C file for a host task, CUDA C++ for a GPU task); at most 256 KiB" },
    candidate_id = { type = "integer", minimum = 1, description = "a candidate already in the store (from history)" },
    defines = DEFINES,
    name = { type = "string", maxLength = 128, description = "a short name for the candidate" },
  }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

local BUDGET = { type = "number", minimum = 0.05, maximum = L.budget_s,
  description = "seconds for the timing loop (default 1)" }

local NUM = { type = "number" }
local STR = { type = "string" }
local INT = { type = "integer" }
local CI = { type = "array", items = NUM, description = "95% bootstrap CI of the median, ms" }

local VERDICTS = "ok, compile_error, launch_error, wrong, nan, unwritten, inputs_modified, nondeterministic, " ..
  "timeout, crashed, too_fast, rejected, out_of_bounds"

local EVALUATION = { type = "object", required = array({ "candidate_id", "verdict", "reason" }),
  properties = {
    candidate_id = INT,
    verdict = { type = "string", description = VERDICTS },
    reason = STR, evidence = { type = "object" },
    time_ms = NUM, ci_ms = CI, min_ms = NUM, spread = NUM, reps = NUM,
    roofline = { type = "object", properties = { tflops = NUM, gbps = NUM, frac_peak = NUM, bound = STR,
      floor_ms = NUM, frac_measured = NUM } },
    resources = { type = "object" }, compile_log = STR, compile_seconds = NUM, eval_seconds = NUM,
    wall_seconds = NUM, gpu = STR, arch = STR, sandbox = STR,
  } }

local function with(base, props, required)
  local s = { type = "object", properties = {}, required = array({}) }
  for k, v in pairs(base.properties) do s.properties[k] = v end
  for k, v in pairs(props or {}) do s.properties[k] = v end
  for _, r in ipairs(base.required or {}) do s.required[#s.required + 1] = r end
  for _, r in ipairs(required or {}) do s.required[#s.required + 1] = r end
  return s
end

local ROW = { type = "object", required = array({ "id", "verdict" }), properties = {
  id = INT, name = STR, proposer = STR, verdict = STR, reason = STR, time_ms = NUM, ci_ms = CI, tool = STR,
  evaluations = INT, created_at = STR } }

local READ_ONLY = { readOnlyHint = true, openWorldHint = false }
local RECORDS = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = false }

M.list = {
  { name = "task_info", title = "Task facts",
    description = "The task: kernel signature, check and bench sizes, tolerance, cost model at the bench size, " ..
      "the GPU (for a CUDA task), the baseline source and this server's limits.",
    inputSchema = obj({}), annotations = READ_ONLY,
    outputSchema = { type = "object", required = array({ "name", "backend", "entry", "signature", "sizes" }),
      properties = { name = STR, backend = STR, entry = STR, kernel = STR, unit = STR,
        signature = { type = "array", items = { type = "object" } }, sizes = { type = "object" },
        tolerance = { type = "object" }, cost_bench = { type = "object" }, gpu = { type = "object" },
        baseline_source = STR, limits = { type = "object" }, run_id = INT, proposer = STR } } },
  { name = "compile", title = "Compile a candidate",
    description = "Compiles a candidate (no run): the compiler log and resource usage (registers, shared memory, " ..
      "spills for CUDA). Recorded in the store.",
    inputSchema = obj(candidate_props({ arch = { type = "string", maxLength = 16, pattern = "^sm_[0-9]+a?$",
      description = "CUDA arch (default sm_90); ignored for host tasks" } })),
    annotations = RECORDS,
    outputSchema = with(EVALUATION, { log = STR, cached = { type = "boolean" } }, { "log" }) },
  { name = "check", title = "Verify and time a candidate",
    description = "The honest evaluator: compiles, verifies against the reference on fresh random inputs at " ..
      "every check size (outputs poisoned, inputs checksummed, guard zones), then times it at the bench size. " ..
      "Returns the verdict, a reason and evidence, the median time with its 95% CI, rates and the roofline. " ..
      "Without source or candidate_id it evaluates the task's own kernel (the baseline).",
    inputSchema = obj(candidate_props({ budget_s = BUDGET })), annotations = RECORDS, outputSchema = EVALUATION },
  { name = "profile", title = "Profile a candidate (CUDA)",
    description = "check, then CUPTI counters at the bench size: roofline position, metrics and " ..
      "plain-language hints. CUDA tasks only.",
    inputSchema = obj(candidate_props({ budget_s = BUDGET, metrics = { type = "string", maxLength = 1024,
      description = "metric names as ncu spells them, a,b or +a,b to add to the defaults" } })),
    annotations = RECORDS,
    outputSchema = with(EVALUATION, { profile = { type = "object" }, profile_error = STR }) },
  { name = "compare", title = "A/B timing of two candidates",
    description = "Verifies both candidates, then times them interleaved (same conditions): ratio = time_a / " ..
      "time_b with a 95% CI; faster says which is faster when the CI excludes 1.",
    inputSchema = obj({ a = obj(candidate_props()), b = obj(candidate_props()), budget_s = BUDGET }, { "a", "b" }),
    annotations = RECORDS,
    outputSchema = { type = "object", required = array({ "a", "b" }), properties = { a = EVALUATION, b = EVALUATION,
      ratio = NUM, ratio_ci = CI, faster = { type = "string", enum = array({ "a", "b", "neither" }) } } } },
  { name = "history", title = "This run's candidates",
    description = "The candidates of this session's run, oldest first, with their latest verdict and time " ..
      "(the most recent `limit` ones).",
    inputSchema = obj({ limit = { type = "integer", minimum = 1, maximum = L.history,
      description = "at most this many (default 50, at most 200)" },
      verdict = { type = "string", maxLength = 32, description = "only candidates with this verdict" } }),
    annotations = READ_ONLY,
    outputSchema = { type = "object", required = array({ "total", "truncated", "candidates" }), properties = {
      run_id = INT, total = INT, truncated = { type = "boolean" }, candidates = { type = "array", items = ROW } } } },
  { name = "best", title = "The best verified candidate",
    description = "The best verified candidate of this run (the last one it crowned by an A/B against the best " ..
      "before it), and its speedup over the task's own kernel when the run measured it.",
    inputSchema = obj({ include_source = { type = "boolean", description = "also return its source" } }),
    annotations = READ_ONLY,
    outputSchema = { type = "object", required = array({ "found" }), properties = {
      found = { type = "boolean" }, run_id = INT, candidate_id = INT, name = STR, proposer = STR, verdict = STR,
      reason = STR, time_ms = NUM, ci_ms = CI, speedup = NUM, tool = STR, evaluations = INT, created_at = STR,
      params = { type = "object" }, source = STR } } },
  { name = "promote", title = "Promote a candidate",
    description = "kloop promote: the staged path from a verified candidate of this run to a promoted one " ..
      "(a fresh worker and secret, hidden sizes, more input distributions, compute-sanitizer or ASan/UBSan, " ..
      "an interleaved A/B against the incumbent). Each step is recorded; the promoted speedup is the A/B ratio.",
    inputSchema = obj({ candidate_id = { type = "integer", minimum = 1 }, note = { type = "string", maxLength = 1024 } },
      { "candidate_id" }),
    annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false },
    outputSchema = { type = "object", required = array({ "candidate_id", "promoted", "state" }), properties = {
      candidate_id = INT, promoted = { type = "boolean" }, state = { type = "string", enum = array({ "promoted", "refused", "failed" }) },
      reason = STR, ratio = NUM, ratio_ci = CI, promotion_id = INT,
      steps = { type = "array", items = { type = "object", properties = { step = STR, status = STR, reason = STR } } } } } },
}

return M
