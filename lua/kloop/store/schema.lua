-- kloop.store.schema: the store's schema: the forward migrations (append-only) and the
-- version they reach, telling a kloop store from another file, migrating one, and the
-- fields of the rows callers write (one list each, the writers derive from them).
local M = {}

-- Forward migrations: entry i takes a database from user_version i-1 to i. A string is
-- executed as SQL, a function(db) may move data. Never edit a released entry: append
-- one (tests/store/schema_v1.sql freezes version 1 and the spec compares against it).
M.migrations = {
  [1] = [[
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  strategy_path TEXT,
  strategy_hash TEXT,
  strategy_text TEXT,
  task_name TEXT,
  task_path TEXT,
  options_json TEXT,
  budget_json TEXT,
  seed INTEGER,
  kloop_version TEXT,
  hostname TEXT,
  pid INTEGER,
  gpu_name TEXT,
  gpu_arch TEXT,
  driver_version TEXT,
  cuda_version TEXT,
  nvrtc_version TEXT,
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  ended_at TEXT,
  status TEXT NOT NULL DEFAULT 'running'
    CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
  stop_reason TEXT
);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name TEXT,
  source TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  params_json TEXT,
  launch_plan_json TEXT,
  proposer TEXT NOT NULL,
  model TEXT,
  prompt_id TEXT,
  prompt_hash TEXT,
  sampling_json TEXT,
  llm_seed INTEGER,
  tokens_in INTEGER,
  tokens_out INTEGER,
  cost_usd REAL,
  note TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE candidate_parents (
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  parent_id INTEGER NOT NULL REFERENCES candidates(id),
  position INTEGER NOT NULL,
  PRIMARY KEY (candidate_id, parent_id)
);
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  verdict TEXT NOT NULL,
  reason TEXT,
  evidence_json TEXT,
  compile_log TEXT,
  resources_json TEXT,
  samples_json TEXT,
  reps INTEGER,
  median_ms REAL,
  ci_lo_ms REAL,
  ci_hi_ms REAL,
  min_ms REAL,
  spread REAL,
  tflops REAL,
  gbps REAL,
  frac_peak REAL,
  bound TEXT,
  floor_ms REAL,
  profile_json TEXT,
  gpu TEXT,
  arch TEXT,
  compile_seconds REAL,
  compile_cached INTEGER,
  eval_seconds REAL,
  wall_seconds REAL,
  extra_json TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  candidate_id INTEGER REFERENCES candidates(id),
  request_hash TEXT,
  model TEXT,
  latency_s REAL,
  http_status INTEGER,
  tokens_in INTEGER,
  tokens_out INTEGER,
  retries INTEGER,
  cost_usd REAL,
  error TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX candidates_run ON candidates(run_id);
CREATE INDEX candidates_hash ON candidates(source_hash);
CREATE INDEX parents_parent ON candidate_parents(parent_id);
CREATE INDEX evaluations_candidate ON evaluations(candidate_id);
CREATE INDEX evaluations_verdict_time ON evaluations(verdict, median_ms);
CREATE INDEX llm_calls_run ON llm_calls(run_id);
CREATE INDEX llm_calls_candidate ON llm_calls(candidate_id);
]],
  -- 2: one llm_calls row per HTTP request, written when it is sent and updated when it
  -- ends: outcome (inflight, ok, failed, retry, cancelled, cached), attempt number
  -- within its call, and the failure kind (docs/LLM.md)
  [2] = [[
ALTER TABLE llm_calls ADD COLUMN outcome TEXT;
ALTER TABLE llm_calls ADD COLUMN attempt INTEGER;
ALTER TABLE llm_calls ADD COLUMN kind TEXT;
]],
  -- 3: the stage of the evaluation cascade an evaluation reached (docs/TASKS.md,
  -- "Stages"): 'screened' (one check size, one input set, a few timed repetitions) or
  -- 'full' (the whole protocol). Rows written before it are full evaluations; only full
  -- ones are bests.
  [3] = [[
ALTER TABLE evaluations ADD COLUMN stage TEXT;
UPDATE evaluations SET stage = 'full';
]],
  -- 4: the LLM response cache (kloop.store.db.llm_cache), request key -> reply text.
  -- IF NOT EXISTS: kloop.llm created this table itself in older stores.
  [4] = [[
CREATE TABLE IF NOT EXISTS llm_cache(key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL);
]],
  -- 5: promotion (docs/PROMOTION.md): one row per `kloop promote` attempt of a candidate,
  -- its outcome, and one row per step with its evidence. A candidate is promoted when its
  -- latest promotion has state 'promoted'.
  [5] = [[
CREATE TABLE promotions (
  id INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  incumbent_id INTEGER REFERENCES candidates(id),
  state TEXT NOT NULL DEFAULT 'running'
    CHECK (state IN ('running', 'promoted', 'refused', 'failed')),
  reason TEXT,
  ratio REAL,
  ratio_ci_lo REAL,
  ratio_ci_hi REAL,
  secret_hash TEXT,
  gpu TEXT,
  kloop_version TEXT,
  seconds REAL,
  evidence_json TEXT,
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  ended_at TEXT
);
CREATE TABLE promotion_steps (
  id INTEGER PRIMARY KEY,
  promotion_id INTEGER NOT NULL REFERENCES promotions(id),
  position INTEGER NOT NULL,
  step TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'skipped')),
  reason TEXT,
  evidence_json TEXT,
  seconds REAL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX promotions_candidate ON promotions(candidate_id);
CREATE INDEX promotion_steps_promotion ON promotion_steps(promotion_id);
]],
  -- 6: the Lua files a run's strategy loaded from outside kloop's own library (the entry
  -- file and its sibling modules), with their text, so a run can be reproduced and a
  -- resume can tell that one changed (docs/SCRIPTING.md, "Sharing strategies").
  [6] = [[
CREATE TABLE run_files (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  module TEXT NOT NULL,
  path TEXT NOT NULL,
  hash TEXT NOT NULL,
  text TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('entry', 'module')),
  PRIMARY KEY (run_id, module)
);
]],
  -- 7: an agent strategy's conversations (docs/AGENTS.md): one row per lineage's
  -- multi-turn conversation with a model, its messages as JSON (tool calls and their
  -- results included), and the candidates it produced point at it.
  [7] = [[
CREATE TABLE conversations (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  lineage INTEGER,
  model TEXT,
  messages_json TEXT NOT NULL DEFAULT '[]',
  turns INTEGER NOT NULL DEFAULT 0,
  tokens_in INTEGER,
  tokens_out INTEGER,
  cost_usd REAL,
  stop_reason TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT
);
ALTER TABLE candidates ADD COLUMN conversation_id INTEGER REFERENCES conversations(id);
CREATE INDEX conversations_run ON conversations(run_id);
]],
}

M.PROPOSERS = { tune = true, llm = true, baseline = true, user = true }
-- A proposer is one of those, or agent:NAME (an MCP client or an agent strategy; NAME
-- a plain word of at most 64 letters, digits, '.', '_' or '-').
function M.valid_proposer(p)
  if type(p) ~= "string" then return false end
  if M.PROPOSERS[p] then return true end
  local name = p:match("^agent:([%w%._%-]+)$")
  return name ~= nil and #name <= 64
end
M.END_STATUS = { done = true, interrupted = true, failed = true }

function M.schema_version() return #M.migrations end

-- The llm_calls columns a caller may set (db:add_llm_call, db:update_llm_call,
-- kloop.llm's call_record), in column order. Each entry: the field name; `column` where
-- the field has another column's name (an alias: the column-named field wins when both
-- are given); `update` when update_llm_call may change it; `scrub` for free text.
M.LLM_CALL_FIELDS = {
  { "candidate_id", update = true },
  { "request_hash" },
  { "model" },
  { "latency_s", update = true }, { "latency", column = "latency_s" },
  { "http_status", update = true }, { "status", column = "http_status" },
  { "tokens_in", update = true },
  { "tokens_out", update = true },
  { "retries", update = true },
  { "cost_usd", update = true }, { "cost", column = "cost_usd" },
  { "error", update = true, scrub = true },
  { "created_at" },
  { "outcome", update = true },
  { "attempt" },
  { "kind", update = true },
}

-- The tables schema version 1 created; a file whose user_version says kloop but lacks
-- one of them belongs to another program.
local V1_TABLES = { "runs", "candidates", "candidate_parents", "evaluations", "llm_calls" }

-- Says what the open file is, reading only: version, or nil, msg. An empty database
-- (no tables, version 0) is `0, "empty"`.
function M.identify(db, path, migrations)
  local rows, err = db:query("PRAGMA user_version")
  if not rows then
    if err:find("not a database", 1, true) then
      return nil, string.format("%s: not a SQLite database (%s)", path, err:gsub("^step: ", ""))
    end
    return nil, string.format("%s: %s", path, err)
  end
  local have, want = rows[1].user_version, #migrations
  if have > want then
    return nil, string.format("%s: schema version %d is newer than this kloop understands (it knows up to %d); use a newer kloop",
      path, have, want)
  end
  local tables = {}
  local t, terr = db:query("SELECT name FROM sqlite_master WHERE type = 'table'")
  if not t then return nil, string.format("%s: %s", path, terr) end
  for _, r in ipairs(t) do tables[r.name] = true end
  if have == 0 then
    -- (a file with only an llm_cache table is kloop.llm's cache from before migration 4,
    -- which made that table itself: it becomes a store)
    tables.llm_cache = nil
    if next(tables) then
      return nil, string.format("%s: not a kloop database (it has tables but schema version 0)", path)
    end
    return 0, "empty"
  end
  for _, name in ipairs(V1_TABLES) do
    if not tables[name] then
      return nil, string.format("%s: not a kloop database (schema version %d, but no '%s' table)", path, have, name)
    end
  end
  return have
end

-- Brings the schema to the newest version, one transaction per step.
function M.migrate(db, path, migrations, have)
  local want = #migrations
  if have < want and db.readonly then
    -- read as it is: the reads use version 1's columns (and SELECT * for later ones);
    -- the next run that writes to it migrates it
    db.version = have
    return true
  end
  for v = have + 1, want do
    local ok, merr = db:batch(function()
      local step = migrations[v]
      if type(step) == "function" then
        local r, e = step(db)
        if r == nil and e then return nil, e end
      else
        local r, e = db:exec(step)
        if not r then return nil, e end
      end
      local r, e = db:exec("PRAGMA user_version = " .. v)
      if not r then return nil, e end
      return true
    end)
    if not ok then return nil, string.format("%s: migration to schema version %d failed: %s", path, v, tostring(merr)) end
  end
  db.version = want
  return true
end

return M
