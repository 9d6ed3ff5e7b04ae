-- kloop.store.writes: the store's writes (methods of a store opened by kloop.store.db):
-- runs, candidates with their parents, evaluations, profiles and LLM calls. Each is its
-- own transaction, committed (and fsynced) before it returns; free text and JSON are
-- scrubbed of secrets on the way in.
local cffi = require("kloop.core.ffi")
local gpu_info = require("kloop.core.gpu")
local sys = require("kloop.core.sys")
local util = require("kloop.util")
local json = require("kloop.store.json")
local schema = require("kloop.store.schema")
local secrets = require("kloop.store.secrets")

local M = {}
local DB = {}
M.methods = DB

local to_json, scrub_text = json.to_json, secrets.scrub_text

-- This machine's name, as a run's writer records it.
function M.hostname()
  local h = util.read_file("/proc/sys/kernel/hostname")
  return h and (h:gsub("%s+$", "")) or nil
end

local function check_fields(what, t, allowed)
  for k in pairs(t) do
    if not allowed[k] then error(string.format("%s: unknown field '%s'", what, tostring(k)), 3) end
  end
end

local RUN_FIELDS = { strategy = true, strategy_path = true, strategy_text = true, task = true, task_name = true,
  task_path = true, options = true, budget = true, seed = true, kloop_version = true, hostname = true,
  pid = true, gpu = true, gpu_name = true, gpu_arch = true, driver_version = true, cuda_version = true,
  nvrtc_version = true, started_at = true }

-- Starts a run: run id, or nil, msg. `task` may be a loaded task table (name and path
-- come from it) and `gpu` a kloop.core.gpu_probe() table.
function DB:begin_run(r)
  self:check_open()
  if type(r) ~= "table" then error("begin_run: give a table of run facts", 2) end
  check_fields("begin_run", r, RUN_FIELDS)
  local strategy_path = r.strategy_path or r.strategy
  local text = r.strategy_text
  if text == nil and strategy_path then
    text = util.read_file(strategy_path)
    if not text then return nil, "cannot read strategy " .. strategy_path end
  end
  local task = type(r.task) == "table" and r.task or nil
  local task_path = r.task_path or (type(r.task) == "string" and r.task) or (task and (task.kernel or task.file))
  local gpu = type(r.gpu) == "table" and r.gpu or {}
  local driver = r.driver_version or gpu.driver_version
  if type(driver) == "number" then driver = gpu_info.driver_version_string(driver) end
  local id, err = self:write([[INSERT INTO runs (strategy_path, strategy_hash, strategy_text, task_name, task_path,
      options_json, budget_json, seed, kloop_version, hostname, pid, gpu_name, gpu_arch, driver_version,
      cuda_version, nvrtc_version, started_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))]],
    strategy_path, text and sys.content_hash(text), scrub_text(text), r.task_name or (task and task.name), task_path,
    to_json(r.options), to_json(r.budget), r.seed, r.kloop_version or cffi.version(),
    r.hostname or M.hostname(), r.pid or sys.getpid(), r.gpu_name or (type(r.gpu) == "string" and r.gpu) or gpu.name,
    r.gpu_arch or gpu.arch, driver, r.cuda_version, r.nvrtc_version, r.started_at)
  if not id then return nil, err end
  return id
end

-- Marks a run finished (ended_at: an ISO time, default now): true, or nil, msg.
function DB:end_run(run_id, status, reason, ended_at)
  self:check_open()
  if not schema.END_STATUS[status] then
    error("end_run: status must be done, interrupted or failed, got " .. tostring(status), 2)
  end
  local _, n = self:write([[UPDATE runs SET status = ?, stop_reason = ?,
    ended_at = coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ?]], status, scrub_text(reason), ended_at, run_id)
  if not _ then return nil, n end
  if n == 0 then return nil, "no run " .. tostring(run_id) end
  return true
end

-- Marks a stopped run as running again in this process (resume): true, or nil, msg.
function DB:reopen_run(run_id)
  self:check_open()
  local _, n = self:write("UPDATE runs SET status = 'running', ended_at = NULL, stop_reason = NULL, pid = ? WHERE id = ?",
    sys.getpid(), run_id)
  if not _ then return nil, n end
  if n == 0 then return nil, "no run " .. tostring(run_id) end
  return true
end

local CAND_FIELDS = { source = true, name = true, params = true, plan = true, launch_plan = true, parents = true,
  proposer = true, model = true, prompt_id = true, prompt_hash = true, sampling = true, llm_seed = true,
  tokens_in = true, tokens_out = true, cost = true, cost_usd = true, note = true, created_at = true,
  conversation_id = true }

-- Records a proposed candidate: id, or nil, msg (unknown run or parent).
function DB:add_candidate(run_id, c)
  self:check_open()
  if type(c) ~= "table" then error("add_candidate: give a table", 2) end
  check_fields("add_candidate", c, CAND_FIELDS)
  if type(c.source) ~= "string" then error("add_candidate: source must be a string", 2) end
  local proposer = c.proposer or "user"
  if not schema.valid_proposer(proposer) then
    error("add_candidate: proposer must be tune, llm, baseline, user or agent:NAME, got " .. tostring(proposer), 2)
  end
  local parents = c.parents or {}
  if type(parents) == "number" then parents = { parents } end
  return self:batch(function()
    local id, err = self:write([[INSERT INTO candidates (run_id, name, source, source_hash, params_json,
        launch_plan_json, proposer, model, prompt_id, prompt_hash, sampling_json, llm_seed, tokens_in, tokens_out,
        cost_usd, note, created_at, conversation_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?)]],
      run_id, c.name, c.source, sys.content_hash(c.source), to_json(c.params), to_json(c.launch_plan or c.plan), proposer,
      c.model, c.prompt_id, c.prompt_hash, to_json(c.sampling), c.llm_seed, c.tokens_in, c.tokens_out,
      c.cost_usd or c.cost, scrub_text(c.note), c.created_at, c.conversation_id)
    if not id then
      if err:find("FOREIGN KEY", 1, true) then
        return nil, c.conversation_id and ("no run " .. tostring(run_id) .. " or conversation " .. tostring(c.conversation_id))
          or ("no run " .. tostring(run_id))
      end
      return nil, err
    end
    for pos, p in ipairs(parents) do
      if p == id then return nil, "a candidate cannot be its own parent" end
      local ok, perr = self:write("INSERT INTO candidate_parents (candidate_id, parent_id, position) VALUES (?, ?, ?)",
        id, p, pos)
      if not ok then
        if perr:find("FOREIGN KEY", 1, true) then return nil, "no parent candidate " .. tostring(p) end
        return nil, perr
      end
    end
    return id
  end)
end

-- Result fields that have their own column; the rest goes to extra_json.
local EVAL_COLUMNS = { verdict = true, reason = true, evidence = true, compile_log = true, log = true,
  resources = true, samples = true, reps = true, time_ms = true, ci_ms = true, min_ms = true, spread = true,
  tflops = true, gbps = true, frac_peak = true, bound = true, floor_ms = true, profile = true, metrics = true,
  gpu = true, arch = true, compile_seconds = true, compile_cached = true, eval_seconds = true,
  wall_seconds = true, created_at = true, stage = true }

-- Records an Evaluator result table for a candidate: id, or nil, msg.
function DB:add_evaluation(candidate_id, r)
  self:check_open()
  if type(r) ~= "table" or type(r.verdict) ~= "string" then
    error("add_evaluation: give an evaluation result table (with a verdict)", 2)
  end
  local extra = {}
  for k, v in pairs(r) do
    if not EVAL_COLUMNS[k] then extra[k] = v end
  end
  local ci = type(r.ci_ms) == "table" and r.ci_ms or {}
  local log = r.compile_log
  if log == nil or log == "" then log = r.log end
  local gpu = type(r.gpu) == "table" and r.gpu.name or r.gpu
  local num = function(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge and x or nil end
  local id, err = self:write([[INSERT INTO evaluations (candidate_id, verdict, reason, evidence_json, compile_log,
      resources_json, samples_json, reps, median_ms, ci_lo_ms, ci_hi_ms, min_ms, spread, tflops, gbps, frac_peak,
      bound, floor_ms, profile_json, gpu, arch, compile_seconds, compile_cached, eval_seconds, wall_seconds,
      extra_json, created_at, stage)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
      coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?)]],
    candidate_id, r.verdict, scrub_text(r.reason), to_json(r.evidence), scrub_text(log),
    to_json(r.resources), to_json(r.samples), num(r.reps), num(r.time_ms), num(ci[1]), num(ci[2]),
    num(r.min_ms), num(r.spread), num(r.tflops), num(r.gbps), num(r.frac_peak), r.bound, num(r.floor_ms),
    to_json(r.profile or r.metrics), gpu, r.arch, num(r.compile_seconds), r.compile_cached,
    num(r.eval_seconds), num(r.wall_seconds), next(extra) and to_json(extra) or nil, r.created_at,
    r.stage == "screened" and "screened" or "full")
  if not id then
    if err:find("FOREIGN KEY", 1, true) then return nil, "no candidate " .. tostring(candidate_id) end
    return nil, err
  end
  return id
end

-- Removes an evaluation that nothing refers to yet: the provisional row of a result that
-- ran ahead of its settling (kloop.store.run A:record_provisional), replaced by its
-- settled row. true, or nil, msg.
function DB:delete_evaluation(evaluation_id)
  self:check_open()
  local ok, changes = self:write("DELETE FROM evaluations WHERE id = ?", evaluation_id)
  if not ok then return nil, changes end
  if changes == 0 then return nil, "no evaluation " .. tostring(evaluation_id) end
  return true
end

-- Attaches a profile summary (kloop.profile) to a recorded evaluation: true, or nil, msg.
function DB:set_profile(evaluation_id, profile)
  self:check_open()
  if type(profile) ~= "table" then error("set_profile: give the profile summary table", 2) end
  local ok, changes = self:write("UPDATE evaluations SET profile_json = ? WHERE id = ?", to_json(profile), evaluation_id)
  if not ok then return nil, changes end
  if changes == 0 then return nil, "no evaluation " .. tostring(evaluation_id) end
  return true
end

-- The llm_calls insert and update, derived from schema.LLM_CALL_FIELDS: the accepted
-- field names, and per column the fields that fill it (the column-named one first).
local LLM_FIELDS, LLM_COLUMNS, LLM_BY_COLUMN = {}, {}, {}
for _, f in ipairs(schema.LLM_CALL_FIELDS) do
  local name, column = f[1], f.column or f[1]
  LLM_FIELDS[name] = true
  if not LLM_BY_COLUMN[column] then
    LLM_BY_COLUMN[column] = { update = f.update, scrub = f.scrub }
    LLM_COLUMNS[#LLM_COLUMNS + 1] = column
  end
  local by = LLM_BY_COLUMN[column]
  by[#by + 1] = name
end

-- The value a call table gives a column, scrubbed where the column is free text.
local function llm_value(c, column)
  local by, v = LLM_BY_COLUMN[column], nil
  for _, name in ipairs(by) do v = v or c[name] end
  if by.scrub then v = scrub_text(v) end
  return v
end

local LLM_INSERT
do
  local values = {}
  for i, column in ipairs(LLM_COLUMNS) do
    values[i] = column == "created_at" and "coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))" or "?"
  end
  LLM_INSERT = string.format("INSERT INTO llm_calls (run_id, %s) VALUES (?, %s)", table.concat(LLM_COLUMNS, ", "),
    table.concat(values, ", "))
end

-- Records one LLM request (never its headers or key): id, or nil, msg.
function DB:add_llm_call(run_id, c)
  self:check_open()
  if type(c) ~= "table" then error("add_llm_call: give a table", 2) end
  check_fields("add_llm_call", c, LLM_FIELDS)
  local vals = {}
  for i, column in ipairs(LLM_COLUMNS) do vals[i] = llm_value(c, column) end
  local id, err = self:write(LLM_INSERT, run_id, unpack(vals, 1, #LLM_COLUMNS))
  if not id then
    if err:find("FOREIGN KEY", 1, true) then return nil, "no run " .. tostring(run_id) .. " or candidate " .. tostring(c.candidate_id) end
    return nil, err
  end
  return id
end

-- Updates a recorded LLM request (its end, or the candidate it produced): true, or nil, msg.
function DB:update_llm_call(id, c)
  self:check_open()
  if type(c) ~= "table" then error("update_llm_call: give a table", 2) end
  check_fields("update_llm_call", c, LLM_FIELDS)
  local set, vals = {}, {}
  for _, column in ipairs(LLM_COLUMNS) do
    if LLM_BY_COLUMN[column].update then
      local v = llm_value(c, column)
      if v ~= nil then set[#set + 1] = column .. " = ?" vals[#vals + 1] = v end
    end
  end
  if #set == 0 then return true end
  vals[#vals + 1] = id
  local ok, changes = self:write("UPDATE llm_calls SET " .. table.concat(set, ", ") .. " WHERE id = ?", unpack(vals))
  if not ok then return nil, changes end
  if changes == 0 then return nil, "no llm call " .. tostring(id) end
  return true
end

-- Records a run's library reference time (kloop.eval.library.measure's table: library,
-- library_ms, library_ci = {lo, hi}, ...), merged into the run's options, where the
-- report reads it. Returns true, or nil, msg.
local LIBRARY_KEYS = { library = "string", library_ms = "number", library_ci = "table", library_math = "string",
  library_version = "number", library_size = "string" }
function DB:set_run_library(run_id, lib)
  self:check_open()
  if type(lib) ~= "table" or type(lib.library_ms) ~= "number" or not (lib.library_ms > 0) then
    error("set_run_library: give a table with library_ms > 0", 2)
  end
  for k, v in pairs(lib) do
    if LIBRARY_KEYS[k] ~= type(v) then error("set_run_library: unexpected " .. tostring(k) .. " = " .. tostring(v), 2) end
  end
  local rows, err = self:query("SELECT options_json FROM runs WHERE id = ?", run_id)
  if not rows then return nil, err end
  if not rows[1] then return nil, "no run " .. tostring(run_id) end
  local o = rows[1].options_json and json.from_json(rows[1].options_json) or {}
  if type(o) ~= "table" then o = {} end
  for k, v in pairs(lib) do o[k] = k == "library_ci" and json.array(v) or v end
  local ok, werr = self:write("UPDATE runs SET options_json = ? WHERE id = ?", to_json(o), run_id)
  if not ok then return nil, werr end
  return true
end

return M
