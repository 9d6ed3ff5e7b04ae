-- kloop.store.queries: the store's reads (methods of a store opened by kloop.store.db):
-- runs with their summaries, candidates with parents and evaluations, lineage, the best,
-- the state a resumed run continues from, LLM calls. Rows come back with *_json columns
-- decoded under the name without _json.
local util = require("kloop.util")
local json = require("kloop.store.json")
local schema = require("kloop.store.schema")
local writes = require("kloop.store.writes")

local M = {}
local DB = {}
M.methods = DB

local from_json, array = json.from_json, json.array

local function decode(row)
  if not row then return nil end
  local json_keys = {}
  for k in pairs(row) do
    if k:match("_json$") then json_keys[#json_keys + 1] = k end
  end
  -- (new keys may not be added while pairs() walks the table)
  for _, k in ipairs(json_keys) do
    row[k:sub(1, -6)] = from_json(row[k])
    row[k] = nil
  end
  if row.compile_cached ~= nil then row.compile_cached = row.compile_cached == 1 end
  return row
end

-- An evaluation row back in the shape of an Evaluator result (time_ms, ci_ms, ...).
local function as_result(e)
  if not e then return nil end
  e.time_ms = e.median_ms
  if e.ci_lo_ms or e.ci_hi_ms then e.ci_ms = { e.ci_lo_ms, e.ci_hi_ms } end
  if type(e.extra) == "table" then
    for k, v in pairs(e.extra) do if e[k] == nil then e[k] = v end end
  end
  return e
end

-- Only full evaluations are bests (docs/TASKS.md, "Stages"). A store read as it is at
-- a schema before version 3 has no stage column: every evaluation there was full.
local function full_only(db, sql)
  local cond = (db.version or #schema.migrations) >= 3 and "AND coalesce(e.stage, 'full') = 'full'" or ""
  return (sql:gsub("@FULL@", cond))
end

local RUN_SUMMARY = [[
SELECT r.id, r.strategy_path, r.strategy_hash, r.task_name, r.task_path, r.options_json, r.budget_json, r.seed,
  r.kloop_version, r.hostname, r.pid, r.gpu_name, r.gpu_arch, r.driver_version, r.cuda_version, r.nvrtc_version,
  r.started_at, r.ended_at, r.status, r.stop_reason,
  (SELECT count(*) FROM candidates c WHERE c.run_id = r.id) AS n_candidates,
  (SELECT count(DISTINCT e.candidate_id) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = r.id) AS n_evaluated,
  (SELECT count(DISTINCT e.candidate_id) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = r.id AND e.verdict = 'ok' @FULL@) AS n_ok,
  coalesce((SELECT e.median_ms FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = r.id AND e.verdict = 'ok' @FULL@ AND json_extract(e.extra_json, '$.crowned') = 1
      ORDER BY e.id DESC LIMIT 1),
    (SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = r.id AND e.verdict = 'ok' @FULL@)) AS best_ms,
  (SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = r.id AND e.verdict = 'ok' AND c.proposer = 'baseline' @FULL@) AS baseline_ms
FROM runs r]]

local function summarize(row)
  decode(row)
  if row.best_ms and row.baseline_ms and row.best_ms > 0 then row.speedup = row.baseline_ms / row.best_ms end
  -- a run still marked running whose writer on this machine is gone was killed
  row.writer_alive = nil
  if row.status == "running" and row.hostname == writes.hostname() and row.pid then
    row.writer_alive = util.file_exists("/proc/" .. row.pid .. "/stat")
  end
  return row
end

-- Every run, oldest first, with counts, best time (the last crowned, as DB:best) and
-- speedup over the baseline.
function DB:runs()
  self:check_open()
  local rows = assert(self:query(full_only(self, RUN_SUMMARY) .. " ORDER BY r.id"))
  for _, r in ipairs(rows) do summarize(r) end
  return array(rows)
end

-- One run with its strategy text and summary: row, or nil, msg.
function DB:run(id)
  self:check_open()
  local rows = assert(self:query(full_only(self, RUN_SUMMARY) .. " WHERE r.id = ?", id))
  if not rows[1] then return nil, "no run " .. tostring(id) end
  local row = summarize(rows[1])
  local t = assert(self:query("SELECT strategy_text FROM runs WHERE id = ?", id))
  row.strategy_text = t[1].strategy_text
  return row
end

function DB:evaluations(candidate_id)
  self:check_open()
  local rows = assert(self:query("SELECT * FROM evaluations WHERE candidate_id = ? ORDER BY id", candidate_id))
  for _, e in ipairs(rows) do as_result(decode(e)) end
  return array(rows)
end

function DB:parents(candidate_id)
  local rows = assert(self:query("SELECT parent_id FROM candidate_parents WHERE candidate_id = ? ORDER BY position",
    candidate_id))
  local out = array()
  for i, r in ipairs(rows) do out[i] = r.parent_id end
  return out
end

local function complete(self, c)
  decode(c)
  c.parents = self:parents(c.id)
  c.evaluations = self:evaluations(c.id)
  c.evaluation = c.evaluations[#c.evaluations]
  return c
end

-- One candidate with its parents, every evaluation and the latest one: row, or nil, msg.
function DB:candidate(id)
  self:check_open()
  local rows = assert(self:query("SELECT * FROM candidates WHERE id = ?", id))
  if not rows[1] then return nil, "no candidate " .. tostring(id) end
  return complete(self, rows[1])
end

-- A run's candidates in order, each with parents and evaluations: list, or nil, msg.
function DB:candidates(run_id)
  self:check_open()
  local exists = assert(self:query("SELECT id FROM runs WHERE id = ?", run_id))
  if not exists[1] then return nil, "no run " .. tostring(run_id) end
  local rows = assert(self:query("SELECT * FROM candidates WHERE run_id = ? ORDER BY id", run_id))
  local by_id = {}
  for _, c in ipairs(rows) do
    decode(c)
    c.parents, c.evaluations = array(), array()
    by_id[c.id] = c
  end
  -- two queries for the whole run instead of two per candidate
  for _, p in ipairs(assert(self:query([[SELECT p.candidate_id, p.parent_id FROM candidate_parents p
      JOIN candidates c ON c.id = p.candidate_id WHERE c.run_id = ? ORDER BY p.candidate_id, p.position]], run_id))) do
    local c = by_id[p.candidate_id]
    c.parents[#c.parents + 1] = p.parent_id
  end
  for _, e in ipairs(assert(self:query([[SELECT e.* FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? ORDER BY e.id]], run_id))) do
    local c = by_id[e.candidate_id]
    c.evaluations[#c.evaluations + 1] = as_result(decode(e))
  end
  for _, c in ipairs(rows) do c.evaluation = c.evaluations[#c.evaluations] end
  return array(rows)
end

-- The candidate and its ancestors, nearest first: list of {id, depth, run_id, proposer,
-- model, parents, verdict, median_ms}, or nil, msg.
function DB:lineage(candidate_id)
  self:check_open()
  local rows = assert(self:query([[
WITH RECURSIVE anc(id, depth) AS (
  SELECT ?, 0
  UNION
  SELECT p.parent_id, anc.depth + 1 FROM candidate_parents p JOIN anc ON p.candidate_id = anc.id
  WHERE anc.depth < 10000
)
SELECT c.id, min(anc.depth) AS depth, c.run_id, c.name, c.proposer, c.model, c.prompt_id, c.source_hash,
  (SELECT e.verdict FROM evaluations e WHERE e.candidate_id = c.id ORDER BY e.id DESC LIMIT 1) AS verdict,
  (SELECT e.median_ms FROM evaluations e WHERE e.candidate_id = c.id ORDER BY e.id DESC LIMIT 1) AS median_ms
FROM anc JOIN candidates c ON c.id = anc.id GROUP BY c.id ORDER BY depth, c.id]], candidate_id))
  if not rows[1] or rows[1].id ~= candidate_id then return nil, "no candidate " .. tostring(candidate_id) end
  for _, r in ipairs(rows) do r.parents = self:parents(r.id) end
  return array(rows)
end

-- The verified candidate with the lowest median of a full evaluation (a screened one is
-- never a best; in a run, or in every run when run_id is nil): candidate row with .evaluation the best one, or nil, msg.
-- A run's best evaluation id: where the run crowned its bests by A/B (kloop 0.2+: every
-- full evaluation after a crowning A/B says crowned true or false in extra_json), the
-- last crowned one, which beat the one before it in an interleaved A/B; in older runs
-- the lowest verified median. Returns eid, candidate_id, median, or nil.
-- A run's best: the driver's (kloop.search.driver Ctx:recompute_best). Each candidate
-- counts by its newest evaluation (a sentinel's re-evaluation is a newer row: one that
-- failed dethrones it), which must be a verified full one; of those the last crowned,
-- by the evaluation that first crowned it (a re-evaluation that passed again is no new
-- crowning); a run stored before crowning by A/B, the lowest median.
local function run_best(self, run_id)
  local newest = [[e.id = (SELECT max(e2.id) FROM evaluations e2 WHERE e2.candidate_id = e.candidate_id)
      AND e.verdict = 'ok' AND e.median_ms IS NOT NULL @FULL@]]
  local crowned = assert(self:query(full_only(self, [[SELECT e.id AS eid, e.candidate_id, e.median_ms
    FROM evaluations e JOIN (SELECT e1.candidate_id AS cid, min(e1.id) AS crown
      FROM evaluations e1 JOIN candidates c ON c.id = e1.candidate_id
      WHERE c.run_id = ? AND json_extract(e1.extra_json, '$.crowned') = 1 GROUP BY e1.candidate_id) k
      ON k.cid = e.candidate_id
    WHERE ]] .. newest .. [[ ORDER BY k.crown DESC LIMIT 1]]), run_id))
  if crowned[1] then return crowned[1] end
  local any = assert(self:query([[SELECT 1 FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND json_extract(e.extra_json, '$.crowned') = 1 LIMIT 1]], run_id))
  -- (a run that crowned, whose crowned candidates all failed again since: no best, as
  -- the driver has none)
  if any[1] then return nil end
  local rows = assert(self:query(full_only(self, [[SELECT e.id AS eid, e.candidate_id, e.median_ms
    FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND ]] .. newest .. [[ ORDER BY e.median_ms, e.id LIMIT 1]]), run_id))
  return rows[1]
end

-- The best verified candidate of a run (its crowned best), or of the whole store (the
-- fastest of the runs' bests), with .evaluation; or nil, msg.
function DB:best(run_id)
  self:check_open()
  local best
  if run_id ~= nil then
    local exists = assert(self:query("SELECT id FROM runs WHERE id = ?", run_id))
    if not exists[1] then return nil, "no run " .. tostring(run_id) end
    best = run_best(self, run_id)
  else
    for _, r in ipairs(assert(self:query("SELECT id FROM runs ORDER BY id"))) do
      local b = run_best(self, r.id)
      if b and (not best or b.median_ms < best.median_ms) then best = b end
    end
  end
  if not best then
    return nil, run_id and ("no verified candidate in run " .. tostring(run_id)) or "no verified candidate in the store"
  end
  local c = self:candidate(best.candidate_id)
  for _, e in ipairs(c.evaluations) do
    if e.id == best.eid then c.evaluation = e end
  end
  return c
end

-- Everything a search loop needs to continue a run: {run, candidates (each with
-- parents and evaluations), evaluated = count, pending = candidates never evaluated,
-- best}, or nil, msg.
function DB:resume_state(run_id)
  local run, err = self:run(run_id)
  if not run then return nil, err end
  local cands = assert(self:candidates(run_id))
  local pending, evaluated = {}, 0
  for _, c in ipairs(cands) do
    if c.evaluation then evaluated = evaluated + 1 else pending[#pending + 1] = c end
  end
  return { run = run, candidates = cands, evaluated = evaluated, pending = array(pending), best = (self:best(run_id)) }
end

-- LLM calls of a run, oldest first.
function DB:llm_calls(run_id)
  self:check_open()
  return array(assert(self:query("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", run_id)))
end

function DB:integrity_check()
  local rows, err = self:query("PRAGMA integrity_check")
  if not rows then return nil, err end
  return rows[1].integrity_check
end

return M
