-- kloop.store.db: the run store: runs, candidates, evaluations and LLM calls in one SQLite file.
local core = require("kloop.core.ffi")
local cjson = require("cjson")
local util = require("kloop.util")
local ffi = core.ffi
local C = core.C

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
}

M.PROPOSERS = { tune = true, llm = true, baseline = true, user = true }
M.END_STATUS = { done = true, interrupted = true, failed = true }

function M.schema_version() return #M.migrations end

-- Where commands look when no --db is given.
function M.default_path()
  local p = os.getenv("KLOOP_DB")
  if p and p ~= "" then return p end
  return "kloop.db"
end

-- Content hash of a source or strategy: two FNV-1a 64 with different seeds (32 hex).
function M.hash(s)
  return (util.hex64(C.kl_hash64(s, #s, 0))) .. (util.hex64(C.kl_hash64(s, #s, 0x9e3779b97f4a7c15ULL)))
end

---------------------------------------------------------------------------
-- Secrets: nothing that looks like a credential reaches the file.

local SCRUBBED = "[scrubbed]"
-- Words that name a credential. "tokens" (a count: max_tokens, budget.tokens) is not one.
local SECRET_WORDS = { key = true, keys = true, apikey = true, token = true, secret = true, secrets = true,
  password = true, passwd = true, passphrase = true, auth = true, authorization = true, credential = true,
  credentials = true, bearer = true, cookie = true }

function M.sensitive_name(name)
  local s = tostring(name):gsub("(%l)(%u)", "%1_%2"):lower()
  for w in s:gmatch("%a+") do
    if SECRET_WORDS[w] then return true end
  end
  -- glued forms (apikey, accesstoken, dbpassword) have no separator to split on
  return s:find("apikey", 1, true) or s:find("password", 1, true) or s:find("secret", 1, true)
    or s:find("accesstoken", 1, true) or s:find("authtoken", 1, true) or false
end

-- Values of credential-looking environment variables, so a key copied into any text
-- (an error message, a note) is caught even when it does not start with sk-.
local env_secrets
local function secrets_from_env()
  if env_secrets then return env_secrets end
  env_secrets = {}
  local blob = util.read_file("/proc/self/environ") or ""
  for entry in blob:gmatch("[^%z]+") do
    local k, v = entry:match("^([^=]+)=(.*)$")
    if k and #v >= 8 and M.sensitive_name(k) then env_secrets[#env_secrets + 1] = v end
  end
  return env_secrets
end

-- A secret read elsewhere (kloop.llm keeps API keys it has wiped from the
-- environment): scrubbed like the environment's own from now on.
function M.remember_secret(v)
  if type(v) ~= "string" or #v < 8 then return end
  local list = secrets_from_env()
  for _, x in ipairs(list) do if x == v then return end end
  list[#list + 1] = v
end

local function has_key_shape(s)
  return s:find("sk%-[%w_%-][%w_%-][%w_%-][%w_%-][%w_%-][%w_%-][%w_%-][%w_%-]") ~= nil
end

-- Free text: the secret parts are replaced, the rest kept (logs stay readable).
function M.scrub_text(s)
  if type(s) ~= "string" then return s end
  for _, v in ipairs(secrets_from_env()) do
    if s:find(v, 1, true) then s = s:gsub(util.escape_pattern(v), SCRUBBED) end
  end
  s = s:gsub("sk%-[%w_%-]+", function(m) return #m >= 11 and SCRUBBED or m end)
  s = s:gsub("([Bb]earer%s+)[%w_%-%.=/+]+", "%1" .. SCRUBBED)
  return s
end

local function secret_value(s)
  if has_key_shape(s) or s:find("[Bb]earer%s+%S") then return true end
  for _, v in ipairs(secrets_from_env()) do
    if s:find(v, 1, true) then return true end
  end
  return false
end

-- A JSON-safe deep copy: credential-named fields and key-shaped strings become
-- "[scrubbed]", non-finite numbers null, functions dropped, cdata numbers converted.
local function clean(v, seen, depth)
  local t = type(v)
  if t == "string" then return secret_value(v) and SCRUBBED or v end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return cjson.null end
    return v
  end
  if t == "boolean" or v == cjson.null then return v end
  if t == "cdata" then
    local n = tonumber(v)
    if n then return n end
    return tostring(v)
  end
  if t ~= "table" then return nil end
  if seen[v] then error("store: a table that contains itself cannot be stored as JSON", 0) end
  if depth > 64 then error("store: table nested too deeply for JSON", 0) end
  seen[v] = true
  local n, count = #v, 0
  for _ in pairs(v) do count = count + 1 end
  local out = {}
  if n > 0 and n == count then
    for i = 1, n do
      local x = clean(v[i], seen, depth + 1)
      if x == nil then x = cjson.null end
      out[i] = x
    end
  else
    for k, x in pairs(v) do
      local key = tostring(k)
      if M.sensitive_name(key) and type(x) ~= "table" and type(x) ~= "number" and type(x) ~= "boolean" then
        out[key] = SCRUBBED
      elseif M.sensitive_name(key) and type(x) == "table" then
        out[key] = SCRUBBED
      else
        out[key] = clean(x, seen, depth + 1)
      end
    end
  end
  seen[v] = nil
  return out
end

-- JSON text of a value after scrubbing, or nil for nil.
function M.to_json(v)
  if v == nil then return nil end
  return cjson.encode(clean(v, {}, 0))
end

function M.scrub(v) return clean(v, {}, 0) end

-- Lists that must print as JSON arrays even when empty (cjson has no way to say so).
M.array_mt = { __name = "kloop.store.array" }
function M.array(t) return setmetatable(t or {}, M.array_mt) end

-- Deterministic JSON for command output: sorted keys, marked or dense lists as arrays.
function M.encode(v)
  local out = {}
  local function enc(x, depth)
    local t = type(x)
    if x == nil or x == cjson.null then out[#out + 1] = "null"
    elseif t == "boolean" then out[#out + 1] = tostring(x)
    elseif t == "number" then
      if x ~= x or x == math.huge or x == -math.huge then out[#out + 1] = "null"
      elseif x == math.floor(x) and math.abs(x) < 2^53 then out[#out + 1] = string.format("%d", x)
      else out[#out + 1] = string.format("%.14g", x) end
    elseif t == "string" then out[#out + 1] = cjson.encode(x)
    elseif t == "table" then
      if depth > 64 then error("store.encode: nested too deeply", 0) end
      local n, count = #x, 0
      for _ in pairs(x) do count = count + 1 end
      if getmetatable(x) == M.array_mt or (n > 0 and n == count) then
        out[#out + 1] = "["
        for i = 1, n do
          if i > 1 then out[#out + 1] = "," end
          enc(x[i], depth + 1)
        end
        out[#out + 1] = "]"
      else
        out[#out + 1] = "{"
        for i, k in ipairs(util.sorted_keys(x)) do
          if i > 1 then out[#out + 1] = "," end
          out[#out + 1] = cjson.encode(tostring(k))
          out[#out + 1] = ":"
          enc(x[k], depth + 1)
        end
        out[#out + 1] = "}"
      end
    else
      out[#out + 1] = cjson.encode(tostring(x))
    end
  end
  enc(v, 0)
  return table.concat(out)
end

local function from_json(s)
  if s == nil then return nil end
  local ok, v = pcall(cjson.decode, s)
  if ok then return v end
  return s
end

---------------------------------------------------------------------------
-- Statements through the kl_db/kl_stmt contract.

local DB = {}
DB.__index = DB

local function check_open(self)
  if not self.h then error("store: the database is closed", 3) end
end

function DB:prepare(sql)
  local st = self.stmts[sql]
  if st then return st end
  local out = ffi.new("kl_stmt*[1]")
  local err = ffi.new("kl_err")
  if C.kl_db_prepare(self.h, sql, out, err) ~= 0 then
    error("store: " .. ffi.string(err.msg) .. " in: " .. sql, 3)
  end
  self.stmts[sql] = out[0]
  return out[0]
end

local function bind(st, i, v)
  local t = type(v)
  if v == nil or v == cjson.null then return C.kl_stmt_bind_null(st, i) end
  if t == "number" then
    if v == math.floor(v) and math.abs(v) < 2^53 then return C.kl_stmt_bind_int64(st, i, v) end
    return C.kl_stmt_bind_double(st, i, v)
  end
  if t == "boolean" then return C.kl_stmt_bind_int64(st, i, v and 1 or 0) end
  if t == "string" then return C.kl_stmt_bind_text(st, i, v, #v) end
  if t == "cdata" then return C.kl_stmt_bind_int64(st, i, v) end
  error("store: cannot bind a " .. t .. " to parameter " .. i, 4)
end

local function column(st, i)
  local ty = C.kl_stmt_column_type(st, i)
  if ty == C.KL_COL_INTEGER then return tonumber(C.kl_stmt_column_int64(st, i)) end
  if ty == C.KL_COL_FLOAT then return C.kl_stmt_column_double(st, i) end
  if ty == C.KL_COL_NULL then return nil end
  local n = ffi.new("size_t[1]")
  local p = C.kl_stmt_column_text(st, i, n)
  if p == nil then return "" end
  return ffi.string(p, n[0])
end

-- Runs one statement with parameters; returns the list of rows (tables by column
-- name), or nil, msg when SQLite refuses (constraint, busy, I/O).
function DB:query(sql, ...)
  check_open(self)
  local st = self:prepare(sql)
  local n = select("#", ...)
  for i = 1, n do bind(st, i, (select(i, ...))) end
  local rows = {}
  local has = ffi.new("int[1]")
  local err = ffi.new("kl_err")
  local ncol
  while true do
    if C.kl_stmt_step(st, has, err) ~= 0 then
      local msg = ffi.string(err.msg)
      C.kl_stmt_reset(st)
      return nil, msg
    end
    if has[0] == 0 then break end
    ncol = ncol or C.kl_stmt_column_count(st)
    local row = {}
    for c = 0, ncol - 1 do row[ffi.string(C.kl_stmt_column_name(st, c))] = column(st, c) end
    rows[#rows + 1] = row
  end
  C.kl_stmt_reset(st)
  return rows
end

-- A statement that writes: returns last insert rowid, changes; or nil, msg.
function DB:write(sql, ...)
  local rows, err = self:query(sql, ...)
  if not rows then return nil, err end
  return tonumber(C.kl_db_last_insert_rowid(self.h)), C.kl_db_changes(self.h)
end

function DB:exec(sql)
  check_open(self)
  return core.try(C.kl_db_exec, self.h, sql)
end

-- Runs fn() in one transaction: commits when it returns a non-nil first value, rolls
-- back on nil, err or an error (re-raised). Nested calls join the outer transaction.
function DB:batch(fn)
  check_open(self)
  if self.in_tx then return fn() end
  local ok, err = self:exec("BEGIN IMMEDIATE")
  if not ok then return nil, err end
  self.in_tx = true
  local res = { pcall(fn) }
  self.in_tx = false
  if res[1] and res[2] ~= nil then
    local cok, cerr = self:exec("COMMIT")
    if not cok then self:exec("ROLLBACK") return nil, cerr end
    return unpack(res, 2, table.maxn(res))
  end
  self:exec("ROLLBACK")
  if not res[1] then error(res[2], 0) end
  return nil, res[3]
end

function DB:close()
  if not self.h then return end
  for _, st in pairs(self.stmts) do C.kl_stmt_finalize(st) end
  self.stmts = {}
  C.kl_db_close(self.h)
  self.h = nil
end

---------------------------------------------------------------------------
-- Opening and migrating.

-- The tables schema version 1 created; a file whose user_version says kloop but lacks
-- one of them belongs to another program.
local V1_TABLES = { "runs", "candidates", "candidate_parents", "evaluations", "llm_calls" }

-- Says what the open file is, reading only: version, or nil, msg. An empty database
-- (no tables, version 0) is `0, "empty"`.
local function identify(db, path, migrations)
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
local function migrate(db, path, migrations, have)
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

local function raw_open(path, flags)
  local out = ffi.new("kl_db*[1]")
  local err = ffi.new("kl_err")
  if C.kl_db_open(path, flags, out, err) ~= 0 then
    local msg = ffi.string(err.msg)
    if msg:find("not a database", 1, true) then
      return nil, string.format("%s: not a SQLite database (file is not a database)", path)
    end
    return nil, msg
  end
  return out[0]
end

-- The first bytes of a file, to tell an empty, a foreign and a SQLite file apart
-- before SQLite touches it: "missing", "folder", "empty", "sqlite" or "other".
local function file_kind(path)
  local f, oerr = io.open(path, "rb")
  if not f then return util.file_exists(path) and "unreadable" or "missing", oerr end
  local head, rerr = f:read(16)
  f:close()
  if head == nil and rerr then return "folder" end
  if head == nil then return "empty" end
  if head == "SQLite format 3\0" then return "sqlite" end
  return "other"
end

-- Opens (creating unless opts.create == false) and migrates a store: db, or nil, msg.
-- opts: create, readonly, migrations (tests append steps).
-- A read-only open never writes: it opens with SQLite's read-only mode, and where the
-- WAL's companion files cannot be opened (a read-only folder or mount) with immutable=1
-- (db.immutable; db.warning says when a WAL file there was left unread). An empty file
-- and anything that is not a kloop store are refused and left as they were, by either.
function M.open(path, opts)
  opts = opts or {}
  path = path or M.default_path()
  if type(path) ~= "string" or path == "" then error("store.open: path must be a file name", 2) end
  local kind, kerr = file_kind(path)
  if kind == "unreadable" then return nil, string.format("cannot open database %s: %s", path, tostring(kerr)) end
  if (opts.create == false or opts.readonly) and kind == "missing" then
    return nil, string.format("no database at %s (give --db PATH or set KLOOP_DB)", path)
  end
  if kind == "folder" then return nil, string.format("%s: is a folder, not a kloop store", path) end
  if kind == "other" then return nil, string.format("%s: not a SQLite database (file is not a database)", path) end
  if kind == "empty" and (opts.readonly or opts.create == false) then
    return nil, string.format("%s: an empty file, not a kloop store (kloop creates a store when a run starts; give --db the path of one)", path)
  end
  local migrations = opts.migrations or M.migrations
  local readonly = opts.readonly or false
  local h, err = raw_open(path, readonly and C.KL_DB_READONLY or C.KL_DB_NO_SETUP)
  if not h then return nil, err end
  local db = setmetatable({ h = h, path = path, stmts = {}, readonly = readonly }, DB)
  local have, what = identify(db, path, migrations)
  if not have and readonly and (what:find("unable to open", 1, true) or what:find("readonly", 1, true)) then
    -- WAL mode needs the -shm file; in a read-only folder SQLite cannot create it
    db:close()
    h, err = raw_open(path, C.KL_DB_IMMUTABLE)
    if not h then return nil, err end
    db = setmetatable({ h = h, path = path, stmts = {}, readonly = true, immutable = true }, DB)
    local wal = io.open(path .. "-wal", "rb")
    local wal_size = wal and wal:seek("end") or 0
    if wal then wal:close() end
    if wal_size > 0 then
      db.warning = string.format("%s: read without its write-ahead log (%s-wal, %d bytes: this folder is read-only), so the newest changes may be missing",
        path, path, wal_size)
    end
    have, what = identify(db, path, migrations)
  end
  if not have then
    db:close()
    return nil, what
  end
  if have == 0 and readonly then
    db:close()
    return nil, string.format("%s: an empty database, not a kloop store", path)
  end
  if not readonly then
    local ok, serr = db:exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
    if not ok then
      db:close()
      return nil, string.format("cannot set up database %s: %s", path, tostring(serr))
    end
  end
  local ok, merr = migrate(db, path, migrations, have)
  if not ok then
    db:close()
    return nil, merr
  end
  return db
end

---------------------------------------------------------------------------
-- Writes: each is its own transaction, committed (and fsynced) before it returns.

local function hostname()
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
  check_open(self)
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
  if type(driver) == "number" then driver = core.driver_version_string(driver) end
  local id, err = self:write([[INSERT INTO runs (strategy_path, strategy_hash, strategy_text, task_name, task_path,
      options_json, budget_json, seed, kloop_version, hostname, pid, gpu_name, gpu_arch, driver_version,
      cuda_version, nvrtc_version, started_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))]],
    strategy_path, text and M.hash(text), M.scrub_text(text), r.task_name or (task and task.name), task_path,
    M.to_json(r.options), M.to_json(r.budget), r.seed, r.kloop_version or core.version(),
    r.hostname or hostname(), r.pid or C.kl_getpid(), r.gpu_name or (type(r.gpu) == "string" and r.gpu) or gpu.name,
    r.gpu_arch or gpu.arch, driver, r.cuda_version, r.nvrtc_version, r.started_at)
  if not id then return nil, err end
  return id
end

-- Marks a run finished (ended_at: an ISO time, default now): true, or nil, msg.
function DB:end_run(run_id, status, reason, ended_at)
  check_open(self)
  if not M.END_STATUS[status] then
    error("end_run: status must be done, interrupted or failed, got " .. tostring(status), 2)
  end
  local _, n = self:write([[UPDATE runs SET status = ?, stop_reason = ?,
    ended_at = coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ?]], status, M.scrub_text(reason), ended_at, run_id)
  if not _ then return nil, n end
  if n == 0 then return nil, "no run " .. tostring(run_id) end
  return true
end

-- Marks a stopped run as running again in this process (resume): true, or nil, msg.
function DB:reopen_run(run_id)
  check_open(self)
  local _, n = self:write("UPDATE runs SET status = 'running', ended_at = NULL, stop_reason = NULL, pid = ? WHERE id = ?",
    C.kl_getpid(), run_id)
  if not _ then return nil, n end
  if n == 0 then return nil, "no run " .. tostring(run_id) end
  return true
end

local CAND_FIELDS = { source = true, name = true, params = true, plan = true, launch_plan = true, parents = true,
  proposer = true, model = true, prompt_id = true, prompt_hash = true, sampling = true, llm_seed = true,
  tokens_in = true, tokens_out = true, cost = true, cost_usd = true, note = true, created_at = true }

-- Records a proposed candidate: id, or nil, msg (unknown run or parent).
function DB:add_candidate(run_id, c)
  check_open(self)
  if type(c) ~= "table" then error("add_candidate: give a table", 2) end
  check_fields("add_candidate", c, CAND_FIELDS)
  if type(c.source) ~= "string" then error("add_candidate: source must be a string", 2) end
  local proposer = c.proposer or "user"
  if not M.PROPOSERS[proposer] then
    error("add_candidate: proposer must be tune, llm, baseline or user, got " .. tostring(proposer), 2)
  end
  local parents = c.parents or {}
  if type(parents) == "number" then parents = { parents } end
  return self:batch(function()
    local id, err = self:write([[INSERT INTO candidates (run_id, name, source, source_hash, params_json,
        launch_plan_json, proposer, model, prompt_id, prompt_hash, sampling_json, llm_seed, tokens_in, tokens_out,
        cost_usd, note, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))]],
      run_id, c.name, c.source, M.hash(c.source), M.to_json(c.params), M.to_json(c.launch_plan or c.plan), proposer,
      c.model, c.prompt_id, c.prompt_hash, M.to_json(c.sampling), c.llm_seed, c.tokens_in, c.tokens_out,
      c.cost_usd or c.cost, M.scrub_text(c.note), c.created_at)
    if not id then
      if err:find("FOREIGN KEY", 1, true) then return nil, "no run " .. tostring(run_id) end
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
  check_open(self)
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
    candidate_id, r.verdict, M.scrub_text(r.reason), M.to_json(r.evidence), M.scrub_text(log),
    M.to_json(r.resources), M.to_json(r.samples), num(r.reps), num(r.time_ms), num(ci[1]), num(ci[2]),
    num(r.min_ms), num(r.spread), num(r.tflops), num(r.gbps), num(r.frac_peak), r.bound, num(r.floor_ms),
    M.to_json(r.profile or r.metrics), gpu, r.arch, num(r.compile_seconds), r.compile_cached,
    num(r.eval_seconds), num(r.wall_seconds), next(extra) and M.to_json(extra) or nil, r.created_at,
    r.stage == "screened" and "screened" or "full")
  if not id then
    if err:find("FOREIGN KEY", 1, true) then return nil, "no candidate " .. tostring(candidate_id) end
    return nil, err
  end
  return id
end

-- Attaches a profile summary (kloop.profile) to a recorded evaluation: true, or nil, msg.
function DB:set_profile(evaluation_id, profile)
  check_open(self)
  if type(profile) ~= "table" then error("set_profile: give the profile summary table", 2) end
  local ok, changes = self:write("UPDATE evaluations SET profile_json = ? WHERE id = ?", M.to_json(profile), evaluation_id)
  if not ok then return nil, changes end
  if changes == 0 then return nil, "no evaluation " .. tostring(evaluation_id) end
  return true
end

local LLM_FIELDS = { candidate_id = true, request_hash = true, model = true, latency_s = true, latency = true,
  http_status = true, status = true, tokens_in = true, tokens_out = true, retries = true, cost = true,
  cost_usd = true, error = true, created_at = true, outcome = true, attempt = true, kind = true }

-- Records one LLM request (never its headers or key): id, or nil, msg.
function DB:add_llm_call(run_id, c)
  check_open(self)
  if type(c) ~= "table" then error("add_llm_call: give a table", 2) end
  check_fields("add_llm_call", c, LLM_FIELDS)
  local id, err = self:write([[INSERT INTO llm_calls (run_id, candidate_id, request_hash, model, latency_s,
      http_status, tokens_in, tokens_out, retries, cost_usd, error, created_at, outcome, attempt, kind)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?, ?, ?)]],
    run_id, c.candidate_id, c.request_hash, c.model, c.latency_s or c.latency, c.http_status or c.status,
    c.tokens_in, c.tokens_out, c.retries, c.cost_usd or c.cost, M.scrub_text(c.error), c.created_at,
    c.outcome, c.attempt, c.kind)
  if not id then
    if err:find("FOREIGN KEY", 1, true) then return nil, "no run " .. tostring(run_id) .. " or candidate " .. tostring(c.candidate_id) end
    return nil, err
  end
  return id
end

local LLM_UPDATE = { "candidate_id", "latency_s", "http_status", "tokens_in", "tokens_out", "retries", "cost_usd",
  "error", "outcome", "kind" }

-- Updates a recorded LLM request (its end, or the candidate it produced): true, or nil, msg.
function DB:update_llm_call(id, c)
  check_open(self)
  if type(c) ~= "table" then error("update_llm_call: give a table", 2) end
  check_fields("update_llm_call", c, LLM_FIELDS)
  local set, vals = {}, {}
  for _, k in ipairs(LLM_UPDATE) do
    local v = c[k]
    if k == "cost_usd" and v == nil then v = c.cost end
    if k == "http_status" and v == nil then v = c.status end
    if k == "latency_s" and v == nil then v = c.latency end
    if k == "error" then v = M.scrub_text(v) end
    if v ~= nil then set[#set + 1] = k .. " = ?" vals[#vals + 1] = v end
  end
  if #set == 0 then return true end
  vals[#vals + 1] = id
  local ok, changes = self:write("UPDATE llm_calls SET " .. table.concat(set, ", ") .. " WHERE id = ?", unpack(vals))
  if not ok then return nil, changes end
  if changes == 0 then return nil, "no llm call " .. tostring(id) end
  return true
end

---------------------------------------------------------------------------
-- Queries. Rows come back with *_json columns decoded under the name without _json.

local function decode(row)
  if not row then return nil end
  local json = {}
  for k in pairs(row) do
    if k:match("_json$") then json[#json + 1] = k end
  end
  -- (new keys may not be added while pairs() walks the table)
  for _, k in ipairs(json) do
    row[k:sub(1, -6)] = from_json(row[k])
    row[k] = nil
  end
  if row.compile_cached ~= nil then row.compile_cached = row.compile_cached == 1 end
  return row
end

local function decode_all(rows)
  for _, r in ipairs(rows) do decode(r) end
  return rows
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
  local cond = (db.version or #M.migrations) >= 3 and "AND coalesce(e.stage, 'full') = 'full'" or ""
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
  (SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = r.id AND e.verdict = 'ok' @FULL@) AS best_ms,
  (SELECT min(e.median_ms) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
    WHERE c.run_id = r.id AND e.verdict = 'ok' AND c.proposer = 'baseline' @FULL@) AS baseline_ms
FROM runs r]]

local function summarize(row)
  decode(row)
  if row.best_ms and row.baseline_ms and row.best_ms > 0 then row.speedup = row.baseline_ms / row.best_ms end
  -- a run still marked running whose writer on this machine is gone was killed
  row.writer_alive = nil
  if row.status == "running" and row.hostname == hostname() and row.pid then
    row.writer_alive = util.file_exists("/proc/" .. row.pid .. "/stat")
  end
  return row
end

-- Every run, oldest first, with counts, best time and speedup over the baseline.
function DB:runs()
  check_open(self)
  local rows = assert(self:query(full_only(self, RUN_SUMMARY) .. " ORDER BY r.id"))
  for _, r in ipairs(rows) do summarize(r) end
  return M.array(rows)
end

-- One run with its strategy text and summary: row, or nil, msg.
function DB:run(id)
  check_open(self)
  local rows = assert(self:query(full_only(self, RUN_SUMMARY) .. " WHERE r.id = ?", id))
  if not rows[1] then return nil, "no run " .. tostring(id) end
  local row = summarize(rows[1])
  local t = assert(self:query("SELECT strategy_text FROM runs WHERE id = ?", id))
  row.strategy_text = t[1].strategy_text
  return row
end

function DB:evaluations(candidate_id)
  check_open(self)
  local rows = assert(self:query("SELECT * FROM evaluations WHERE candidate_id = ? ORDER BY id", candidate_id))
  for _, e in ipairs(rows) do as_result(decode(e)) end
  return M.array(rows)
end

function DB:parents(candidate_id)
  local rows = assert(self:query("SELECT parent_id FROM candidate_parents WHERE candidate_id = ? ORDER BY position",
    candidate_id))
  local out = M.array()
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
  check_open(self)
  local rows = assert(self:query("SELECT * FROM candidates WHERE id = ?", id))
  if not rows[1] then return nil, "no candidate " .. tostring(id) end
  return complete(self, rows[1])
end

-- A run's candidates in order, each with parents and evaluations: list, or nil, msg.
function DB:candidates(run_id)
  check_open(self)
  local exists = assert(self:query("SELECT id FROM runs WHERE id = ?", run_id))
  if not exists[1] then return nil, "no run " .. tostring(run_id) end
  local rows = assert(self:query("SELECT * FROM candidates WHERE run_id = ? ORDER BY id", run_id))
  local by_id = {}
  for _, c in ipairs(rows) do
    decode(c)
    c.parents, c.evaluations = M.array(), M.array()
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
  return M.array(rows)
end

-- The candidate and its ancestors, nearest first: list of {id, depth, run_id, proposer,
-- model, parents, verdict, median_ms}, or nil, msg.
function DB:lineage(candidate_id)
  check_open(self)
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
  return M.array(rows)
end

-- The verified candidate with the lowest median of a full evaluation (a screened one is
-- never a best; in a run, or in every run when run_id is nil): candidate row with .evaluation the best one, or nil, msg.
function DB:best(run_id)
  check_open(self)
  local rows
  if run_id ~= nil then
    local exists = assert(self:query("SELECT id FROM runs WHERE id = ?", run_id))
    if not exists[1] then return nil, "no run " .. tostring(run_id) end
    rows = assert(self:query(full_only(self, [[SELECT e.id AS eid, e.candidate_id FROM evaluations e
      JOIN candidates c ON c.id = e.candidate_id
      WHERE c.run_id = ? AND e.verdict = 'ok' AND e.median_ms IS NOT NULL @FULL@
      ORDER BY e.median_ms, e.id LIMIT 1]]), run_id))
  else
    rows = assert(self:query(full_only(self, [[SELECT e.id AS eid, e.candidate_id FROM evaluations e
      WHERE e.verdict = 'ok' AND e.median_ms IS NOT NULL @FULL@
      ORDER BY e.median_ms, e.id LIMIT 1]])))
  end
  if not rows[1] then
    return nil, run_id and ("no verified candidate in run " .. tostring(run_id)) or "no verified candidate in the store"
  end
  local c = self:candidate(rows[1].candidate_id)
  for _, e in ipairs(c.evaluations) do
    if e.id == rows[1].eid then c.evaluation = e end
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
  return { run = run, candidates = cands, evaluated = evaluated, pending = M.array(pending), best = (self:best(run_id)) }
end

-- LLM calls of a run, oldest first.
function DB:llm_calls(run_id)
  check_open(self)
  return M.array(assert(self:query("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", run_id)))
end

function DB:integrity_check()
  local rows, err = self:query("PRAGMA integrity_check")
  if not rows then return nil, err end
  return rows[1].integrity_check
end

return M
