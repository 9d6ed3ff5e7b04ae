-- tests/store/schema_v1.sql: a kloop store at schema version 1, frozen as released, with a few rows.
-- The migration spec loads it and checks that kloop opens and migrates it; never edit it.
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
INSERT INTO runs (id, strategy_path, strategy_hash, strategy_text, task_name, task_path, options_json, budget_json,
  seed, kloop_version, hostname, pid, gpu_name, gpu_arch, driver_version, cuda_version, nvrtc_version, started_at,
  ended_at, status, stop_reason)
VALUES (1, 'strategies/beam.lua', '00000000000000000000000000000001', '-- beam', 'sgemm', 'kernels/gemm.cu',
  '{"beam":4}', '{"candidates":3}', 42, '0.1.0', 'old-box', 1234, 'NVIDIA H200', 'sm_90', '13.0', '13.0', '13.0',
  '2025-12-01T09:00:00.000Z', '2025-12-01T09:10:00.000Z', 'done', 'budget exhausted');
INSERT INTO candidates (id, run_id, name, source, source_hash, params_json, proposer, created_at)
VALUES (1, 1, 'gemm.cu', '__global__ void gemm() {}', 'aaaa', NULL, 'baseline', '2025-12-01T09:00:01.000Z'),
       (2, 1, NULL, '__global__ void gemm() { /* tiled */ }', 'bbbb', '{"BM":64}', 'tune', '2025-12-01T09:01:00.000Z');
INSERT INTO candidate_parents (candidate_id, parent_id, position) VALUES (2, 1, 1);
INSERT INTO evaluations (id, candidate_id, verdict, reason, median_ms, ci_lo_ms, ci_hi_ms, samples_json, created_at)
VALUES (1, 1, 'ok', 'verified', 4.0, 3.9, 4.1, '[3.9,4.0,4.1]', '2025-12-01T09:00:05.000Z'),
       (2, 2, 'ok', 'verified', 1.0, 0.99, 1.01, '[0.99,1.0,1.01]', '2025-12-01T09:01:05.000Z');
INSERT INTO llm_calls (id, run_id, candidate_id, request_hash, model, latency_s, http_status, tokens_in, tokens_out,
  retries, cost_usd, error, created_at)
VALUES (1, 1, NULL, 'cafe', 'claude-x', 3.5, 429, 100, 0, 2, 0.0, 'rate limited', '2025-12-01T09:02:00.000Z');
PRAGMA user_version = 1;
