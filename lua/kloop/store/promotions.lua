-- kloop.store.promotions: the store's promotion records (migration 5; docs/PROMOTION.md):
-- one row per `kloop promote` attempt and one per step with its evidence. Methods of a
-- store opened by kloop.store.db. A candidate is promoted when its latest promotion
-- has state 'promoted'.
local json = require("kloop.store.json")

local M = {}
local DB = {}
M.methods = DB

local from_json, array = json.from_json, json.array

local enc = json.to_json -- (nil for nil)

-- Starts a promotion attempt: p = {candidate_id, incumbent_id, secret_hash, gpu,
-- kloop_version}. Returns its id, or nil, msg.
function DB:begin_promotion(p)
  return self:write([[INSERT INTO promotions (candidate_id, incumbent_id, secret_hash, gpu, kloop_version)
    VALUES (?, ?, ?, ?, ?)]], p.candidate_id, p.incumbent_id, p.secret_hash, p.gpu, p.kloop_version)
end

-- One step as it ends: s = {position, step, status ('passed'|'failed'|'skipped'), reason,
-- evidence (a table), seconds}. Returns the step's id, or nil, msg.
function DB:add_promotion_step(promotion_id, s)
  return self:write([[INSERT INTO promotion_steps (promotion_id, position, step, status, reason, evidence_json,
    seconds) VALUES (?, ?, ?, ?, ?, ?, ?)]], promotion_id, s.position, s.step, s.status, s.reason, enc(s.evidence),
    s.seconds)
end

-- Ends an attempt: e = {state, reason, ratio, ratio_ci = {lo, hi}, incumbent_id, gpu,
-- seconds, evidence}. Returns true, or nil, msg.
function DB:end_promotion(promotion_id, e)
  local ci = e.ratio_ci or {}
  local ok, err = self:write([[UPDATE promotions SET state = ?, reason = ?, ratio = ?, ratio_ci_lo = ?,
    ratio_ci_hi = ?, incumbent_id = coalesce(?, incumbent_id), gpu = coalesce(?, gpu), seconds = ?,
    evidence_json = ?, ended_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?]],
    e.state, e.reason, e.ratio, ci[1], ci[2], e.incumbent_id, e.gpu, e.seconds, enc(e.evidence), promotion_id)
  if not ok then return nil, err end
  return true
end

local function decode(row)
  if row.evidence_json then row.evidence = from_json(row.evidence_json) end
  row.evidence_json = nil
  if row.ratio_ci_lo or row.ratio_ci_hi then row.ratio_ci = { row.ratio_ci_lo, row.ratio_ci_hi } end
  return row
end

-- The steps of a promotion in order (evidence decoded).
function DB:promotion_steps(promotion_id)
  self:check_open()
  local rows = assert(self:query("SELECT * FROM promotion_steps WHERE promotion_id = ? ORDER BY position, id",
    promotion_id))
  for _, r in ipairs(rows) do decode(r) end
  return array(rows)
end

-- Every promotion attempt of a candidate, oldest first, each with its steps.
function DB:promotions(candidate_id)
  self:check_open()
  local rows = assert(self:query("SELECT * FROM promotions WHERE candidate_id = ? ORDER BY id", candidate_id))
  for _, r in ipairs(rows) do
    decode(r)
    r.steps = self:promotion_steps(r.id)
  end
  return array(rows)
end

-- The latest promotion attempt of a candidate (with its steps), or nil.
function DB:latest_promotion(candidate_id)
  local all = self:promotions(candidate_id)
  return all[#all]
end

-- Whether the candidate's latest promotion promoted it.
function DB:is_promoted(candidate_id)
  local p = self:latest_promotion(candidate_id)
  return p ~= nil and p.state == "promoted", p
end

-- The task's incumbent: the candidate promoted last among the runs of task_name whose
-- latest promotion still says promoted (not `except`): candidate id, promotion id; or nil.
function DB:last_promoted(task_name, except)
  self:check_open()
  local rows = assert(self:query([[SELECT p.id, p.candidate_id FROM promotions p
    JOIN candidates c ON c.id = p.candidate_id JOIN runs r ON r.id = c.run_id
    WHERE r.task_name = ? AND p.state = 'promoted' AND p.candidate_id != ?
      AND p.id = (SELECT max(q.id) FROM promotions q WHERE q.candidate_id = p.candidate_id)
    ORDER BY p.id DESC LIMIT 1]], task_name, except or -1))
  if not rows[1] then return nil end
  return rows[1].candidate_id, rows[1].id
end

return M
