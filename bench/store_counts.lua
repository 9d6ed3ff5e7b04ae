-- bench/store_counts.lua: one line of a run store's counts, for the benches that kill
-- and resume: candidates, evaluations, candidates evaluated twice, without one, crashed,
-- unsettled (a result that ran but had not settled), filled (run to fill a wait), same
-- code (a candidate with the best's code, never crowned: no A/B).
-- usage: kloop bench/store_counts.lua DB
local db = assert(require("kloop.store.db").open(assert(arg[1], "usage: kloop bench/store_counts.lua DB"),
  { create = false }))
local function n(sql) return db:query("SELECT count(*) AS n FROM " .. sql)[1].n end
print(string.format("cands %d, evals %d, twice %d, none %d, crashed %d, unsettled %d, filled %d, same code %d",
  n("candidates"), n("evaluations"),
  n("(SELECT candidate_id FROM evaluations GROUP BY candidate_id HAVING count(*) > 1)"),
  n("candidates WHERE id NOT IN (SELECT candidate_id FROM evaluations)"),
  n("evaluations WHERE verdict = 'crashed'"),
  n("evaluations WHERE json_extract(extra_json, '$.unsettled') = 1"),
  n("evaluations WHERE json_extract(extra_json, '$.filled') = 1"),
  n("evaluations WHERE json_extract(extra_json, '$.ab.same_code') = 1")))
