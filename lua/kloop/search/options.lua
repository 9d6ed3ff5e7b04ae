-- kloop.search.options: a strategy's options: the ones every strategy has, the types a
-- value is checked against, the help text, and the parser of `--name value` words
-- (kloop.search.driver re-exports these names). Commands parse theirs with kloop.cli.args.
local rng = require("kloop.search.rng")

local M = {}

-- Options every strategy has; a strategy adds its own in `options`: { name, default,
-- help[, type] }. Types: count (a whole number >= 1), uint (a whole number >= 0),
-- seconds and nonneg (a number >= 0), fraction (0 to 1), number, seed, size (bytes or
-- 512k / 1M), string, boolean; without one, the default's value implies it (a whole
-- number >= 1: count, 0: uint, another number: nonneg).
M.common_options = {
  { "budget", 32, "candidates to evaluate (the baseline not counted)", "count" },
  { "time", 0, "wall-clock budget in seconds (0: none)", "seconds" },
  { "tokens", 0, "LLM token budget (0: none)", "uint" },
  { "money", 0, "LLM cost budget in dollars (0: none)", "nonneg" },
  { "seed", 0, "run seed, a whole number (0: drawn at random and recorded)", "seed" },
  { "timing_budget", 1.0, "seconds of timing per candidate", "seconds" },
  { "deadline", 0, "seconds one evaluation may take (0: the task's)", "seconds" },
  { "db", "", "store path (default ./kloop.db, or $KLOOP_DB)" },
  { "resume", 0, "continue stored run N where it stopped (same task and strategy)", "uint" },
  { "force", false, "resume even if the strategy's files changed (or another strategy made the run); recorded in the run" },
  { "promote", "auto", "at the end of a finished search, promote the best through the canary: auto or off" },
  { "report", "", "rewrite this HTML report (kloop report) while the search runs, and at its end" },
  { "no_store", false, "do not write the run to the store" },
  { "quiet", false, "no progress lines" },
  { "model", "", "LLM model(s), comma-separated for an ensemble (default $KLOOP_MODEL)" },
  { "llm_url", "", "OpenAI-compatible server URL (default $KLOOP_LLM_URL / vendor variables)" },
  { "no_cache", false, "do not answer LLM requests from the response cache" },
  { "temperature", 0.7, "LLM sampling temperature", "nonneg" },
  { "llm_timeout", 0, "seconds a model may think before its reply starts (0: $KLOOP_LLM_TIMEOUT or 600)", "seconds" },
  { "llm_idle_timeout", 0, "seconds a started reply may stall (0: $KLOOP_LLM_IDLE_TIMEOUT or 60)", "seconds" },
  { "llm_connect_timeout", 0, "seconds to connect to the LLM server (0: $KLOOP_LLM_CONNECT_TIMEOUT or 15)", "seconds" },
  { "llm_deadline", 0, "seconds one LLM call may take, retries included (0: $KLOOP_LLM_DEADLINE or 1800)", "seconds" },
  { "llm_max_reply", "", "largest LLM reply accepted, e.g. 512k, 4M (default $KLOOP_LLM_MAX_REPLY or 1M)", "size" },
  { "pipeline", true, "ask the LLM for the next step while the current batch is evaluated" },
  { "pipeline_depth", 0, "LLM requests kept in flight ahead (0: two batches)", "uint" },
  { "profile", "best", "CUPTI-profile verified candidates: best (each new best), all, or none" },
  { "metrics", "", "profiler metrics (a,b,c just those; +a,b added to the defaults)" },
  { "cascade", "off", "screen each candidate first and fully evaluate only those worth it: on or off" },
  { "extend_timing", true, "time a candidate longer (past its CI target, within --timing-budget) while the next binary compiles" },
  { "workers", 1, "evaluation workers (CPU tasks; a GPU task takes one per GPU: --gpus)", "count" },
  { "gpus", "", "a worker per GPU: all, or device numbers 0,1,... (default: GPU 0 only)" },
  { "remote_workers", "", "workers on other hosts: Unix sockets S1,S2,... served by kloop-mpi (docs/SCALE.md)" },
  { "cascade_margin", 1.5, "cascade: promote a screened candidate within this factor of the best screened time", "nonneg" },
  { "screen_reps", 3, "cascade: timed repetitions of a screen (bench size, no CI target)", "count" },
  { "crown_gain", 0.005, "a new best needs its A/B's ratio CI above 1 + this (0.005: 0.5% faster, beyond a self-A/B's noise)",
    "fraction" },
}

-- A strategy's own options, then the common ones it does not redeclare.
function M.all(strategy)
  local out, seen = {}, {}
  for _, o in ipairs(strategy.options or {}) do out[#out + 1] = o seen[o[1]] = true end
  for _, o in ipairs(M.common_options) do if not seen[o[1]] then out[#out + 1] = o end end
  return out
end
local all_options = M.all

-- The help text of a strategy (`kloop STRATEGY help`).
function M.help(strategy, path)
  local lines = { string.format("%s: %s", strategy.name or path, strategy.description or ""), "",
    string.format("usage: kloop %s TARGET [--option value ...]", path), "", "options:" }
  for _, o in ipairs(all_options(strategy)) do
    lines[#lines + 1] = string.format("  --%-16s %s (default %s)", o[1]:gsub("_", "-"), o[3], tostring(o[2]))
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The type of a declared option (its fourth field, else implied by the default).
function M.option_type(o)
  if o[4] then return o[4] end
  local d = o[2]
  if type(d) == "boolean" then return "boolean" end
  if type(d) ~= "number" then return "string" end
  if d == math.floor(d) and d >= 1 then return "count" end
  if d == 0 then return "uint" end
  if d > 0 then return "nonneg" end
  return "number"
end

local TYPE_WANTS = { count = "a whole number >= 1", uint = "a whole number >= 0", seconds = "seconds (a number >= 0)",
  nonneg = "a number >= 0", fraction = "a number from 0 to 1", number = "a number" }

-- A value given for option o (a string from the command line, or already a value):
-- the converted value, or nil, what it must be.
function M.check_value(o, v)
  local ty = M.option_type(o)
  if ty == "string" then return tostring(v) end
  if ty == "boolean" then
    if v == true or v == "true" or v == "1" then return true end
    if v == false or v == "false" or v == "0" then return false end
    return nil, "give true or false"
  end
  if ty == "size" then
    if v == "" then return "" end
    if not require("kloop.llm.session").parse_size(v) then return nil, "give a size (bytes, or 512k, 1M)" end
    return tostring(v)
  end
  if ty == "seed" then
    local n, why = rng.check(v)
    if not n then return nil, why end
    return n
  end
  local n = tonumber(v)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil, "give " .. (TYPE_WANTS[ty] or "a number") end
  local whole = n == math.floor(n)
  if (ty == "count" and not (whole and n >= 1)) or (ty == "uint" and not (whole and n >= 0))
      or ((ty == "seconds" or ty == "nonneg") and n < 0) or (ty == "fraction" and (n < 0 or n > 1)) then
    return nil, "give " .. TYPE_WANTS[ty]
  end
  return n
end

-- Parses --name value pairs against the declared options; returns opts, target or nil, err.
function M.parse(strategy, args)
  local decl = {}
  for _, o in ipairs(all_options(strategy)) do decl[o[1]] = o end
  local opts, target, given = {}, nil, {}
  for name, o in pairs(decl) do opts[name] = o[2] end
  local i = 1
  while i <= #args do
    local a = args[i]
    local name, inline = a:match("^%-%-([%w%-_]+)=(.*)$")
    name = name or a:match("^%-%-([%w%-_]+)$")
    if name then
      name = name:gsub("%-", "_")
      local o = decl[name]
      if not o then return nil, "unknown option --" .. name:gsub("_", "-") .. " (see: kloop STRATEGY help)" end
      given[name] = true
      if type(o[2]) == "boolean" then
        if inline ~= nil and inline ~= "true" and inline ~= "1" and inline ~= "false" and inline ~= "0" then
          return nil, string.format("--%s=%s: give true or false", name:gsub("_", "-"), inline)
        end
        opts[name] = inline == nil or inline == "true" or inline == "1"
      else
        local v = inline or args[i + 1]
        if v == nil then return nil, "--" .. name .. " needs a value" end
        if not inline then i = i + 1 end
        local cv, why = M.check_value(o, v)
        if cv == nil then return nil, string.format("--%s %s: %s", name:gsub("_", "-"), v, why) end
        opts[name] = cv
      end
    elseif not target then
      target = a
    else
      return nil, "unexpected argument " .. a
    end
    i = i + 1
  end
  return opts, target, given
end

return M
