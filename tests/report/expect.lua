-- tests/report/expect.lua: the numbers the report must show, straight from SQL on the store (kloop tests/report/expect.lua DB RUN...).
-- Prints one JSON document; tests/report/check_dom.py compares it with the page's DOM.
local store = require("kloop.store.db")
local cjson = require("cjson")
local db = assert(store.open(arg[1], { create = false, readonly = true }))
local function q(sql, ...) return assert(db:query(sql, ...)) end
local out = { runs = {} }
for i = 2, #arg do
  local id = tonumber(arg[i])
  local r = { id = id }
  r.candidates = q("SELECT count(*) AS n FROM candidates WHERE run_id = ?", id)[1].n
  r.evaluations = q("SELECT count(*) AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.run_id = ?", id)[1].n
  r.tokens = q("SELECT coalesce(sum(tokens_in), 0) + coalesce(sum(tokens_out), 0) AS n FROM llm_calls WHERE run_id = ?", id)[1].n
  r.cost_usd = q("SELECT sum(cost_usd) AS n FROM llm_calls WHERE run_id = ?", id)[1].n
  r.best_ms = q([[SELECT min(e.median_ms) AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND e.verdict = 'ok']], id)[1].n
  r.best_id = q([[SELECT c.id AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND e.verdict = 'ok' ORDER BY e.median_ms LIMIT 1]], id)[1].n
  r.baseline_ms = q([[SELECT min(e.median_ms) AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND e.verdict = 'ok' AND c.proposer = 'baseline']], id)[1].n
  r.seed = q("SELECT seed AS n FROM runs WHERE id = ?", id)[1].n
  r.strategy_hash = q("SELECT strategy_hash AS n FROM runs WHERE id = ?", id)[1].n
  r.groups = q([[SELECT c.model, c.prompt_id || '@' || c.prompt_hash AS prompt, count(DISTINCT c.id) AS proposals,
      (SELECT sum(l.tokens_in) FROM llm_calls l JOIN candidates x ON x.id = l.candidate_id
        WHERE x.run_id = c.run_id AND x.model = c.model AND x.prompt_hash = c.prompt_hash AND x.prompt_id = c.prompt_id) AS tokens_in,
      (SELECT sum(l.tokens_out) FROM llm_calls l JOIN candidates x ON x.id = l.candidate_id
        WHERE x.run_id = c.run_id AND x.model = c.model AND x.prompt_hash = c.prompt_hash AND x.prompt_id = c.prompt_id) AS tokens_out,
      (SELECT sum(l.cost_usd) FROM llm_calls l JOIN candidates x ON x.id = l.candidate_id
        WHERE x.run_id = c.run_id AND x.model = c.model AND x.prompt_hash = c.prompt_hash AND x.prompt_id = c.prompt_id) AS cost_usd,
      (SELECT count(*) FROM evaluations e JOIN candidates x ON x.id = e.candidate_id
        WHERE x.run_id = c.run_id AND x.model = c.model AND x.prompt_hash = c.prompt_hash AND x.prompt_id = c.prompt_id
        AND e.verdict = 'ok' AND e.median_ms < (SELECT min(e2.median_ms) FROM evaluations e2
          JOIN candidates c2 ON c2.id = e2.candidate_id WHERE c2.run_id = x.run_id AND e2.verdict = 'ok' AND e2.id < e.id)) AS improvements
    FROM candidates c WHERE c.run_id = ? AND c.proposer = 'llm' GROUP BY c.model, c.prompt_id, c.prompt_hash]], id)
  r.verdicts = q([[SELECT e.verdict, count(*) AS n FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND e.verdict <> 'ok' GROUP BY e.verdict]], id)
  r.top = q([[SELECT c.id, e.median_ms FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = ? AND e.verdict = 'ok' ORDER BY e.median_ms LIMIT 10]], id)
  out.runs[#out.runs + 1] = r
end
out.prompt_ids = q("SELECT prompt_id, count(DISTINCT prompt_hash) AS versions FROM candidates WHERE prompt_id IS NOT NULL GROUP BY prompt_id")
db:close()
print(cjson.encode(out))
