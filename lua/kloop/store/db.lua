-- kloop.store.db: the run store: runs, candidates, evaluations, LLM calls and the LLM
-- response cache in one SQLite file. This module opens a store and is its face: the
-- schema (kloop.store.schema), scrubbing (kloop.store.secrets), JSON (kloop.store.json),
-- writes (kloop.store.writes) and reads (kloop.store.queries) are reachable from here
-- under the names they always had. Also `kloop.store`.
local sys = require("kloop.core.sys")
local sqlite = require("kloop.core.sqlite")
local util = require("kloop.util")
local schema = require("kloop.store.schema")
local secrets = require("kloop.store.secrets")
local json = require("kloop.store.json")

local M = {}

M.migrations = schema.migrations
M.schema_version = schema.schema_version
M.PROPOSERS = schema.PROPOSERS
M.END_STATUS = schema.END_STATUS
M.LLM_CALL_FIELDS = schema.LLM_CALL_FIELDS

M.sensitive_name = secrets.sensitive_name
M.remember_secret = secrets.remember
M.scrub = secrets.scrub
-- Free text with its secrets replaced by the store's marker, "[scrubbed]".
function M.scrub_text(s) return secrets.scrub_text(s) end

M.to_json = json.to_json
M.encode = json.encode
M.array = json.array
M.array_mt = json.array_mt

-- Where commands look when no --db is given.
function M.default_path()
  local p = os.getenv("KLOOP_DB")
  if p and p ~= "" then return p end
  return "kloop.db"
end

-- Content hash of a source or strategy (kloop.core.sys.content_hash: 32 hex).
M.hash = sys.content_hash

---------------------------------------------------------------------------
-- Statements through kloop.core.sqlite. self.h is the connection, nil once closed;
-- statements are compiled once per SQL text and kept until close.

local DB = {}
DB.__index = DB

-- Raises (at the caller of the method that calls it) when the store was closed.
function DB:check_open()
  if not self.h then error("store: the database is closed", 3) end
end

function DB:prepare(sql)
  local st = self.stmts[sql]
  if st then return st end
  local err
  st, err = self.h:prepare(sql)
  if not st then error("store: " .. err .. " in: " .. sql, 3) end
  self.stmts[sql] = st
  return st
end

-- Runs one statement with parameters; returns the list of rows (tables by column
-- name), or nil, msg when SQLite refuses (constraint, busy, I/O, a value too big).
-- A parameter that cannot be bound (out of range, no SQL type) raises.
function DB:query(sql, ...)
  self:check_open()
  local st = self:prepare(sql)
  for i = 1, select("#", ...) do
    local ok, err = st:bind(i, (select(i, ...)), 3)
    if not ok then return nil, err end
  end
  local rows = {}
  while true do
    local has, err = st:step()
    if has == nil then
      st:reset()
      return nil, err
    end
    if not has then break end
    rows[#rows + 1] = st:row()
  end
  st:reset()
  return rows
end

-- A statement that writes: returns last insert rowid, changes; or nil, msg.
function DB:write(sql, ...)
  local rows, err = self:query(sql, ...)
  if not rows then return nil, err end
  return self.h:last_insert_rowid(), self.h:changes()
end

function DB:exec(sql)
  self:check_open()
  return self.h:exec(sql)
end

-- Runs fn() in one transaction: commits when it returns a non-nil first value, rolls
-- back on nil, err or an error (re-raised). Nested calls join the outer transaction.
function DB:batch(fn)
  self:check_open()
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
  for _, st in pairs(self.stmts) do st:finalize() end
  self.stmts = {}
  self.h:close()
  self.h = nil
end

-- The writes and the reads are methods of the same object.
for _, part in ipairs({ require("kloop.store.writes"), require("kloop.store.queries"),
  require("kloop.store.promotions"), require("kloop.store.files"), require("kloop.store.conversations") }) do
  for name, fn in pairs(part.methods) do DB[name] = fn end
end

---------------------------------------------------------------------------
-- Opening and migrating.

local function raw_open(path, flags)
  local conn, msg = sqlite.open(path, flags)
  if not conn then
    if msg:find("not a database", 1, true) then
      return nil, string.format("%s: not a SQLite database (file is not a database)", path)
    end
    return nil, msg
  end
  return conn
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
    return nil, string.format("%s: an empty file, not a kloop store"
      .. " (kloop creates a store when a run starts; give --db the path of one)", path)
  end
  local migrations = opts.migrations or M.migrations
  local readonly = opts.readonly or false
  local h, err = raw_open(path, readonly and sqlite.READONLY or sqlite.NO_SETUP)
  if not h then return nil, err end
  local db = setmetatable({ h = h, path = path, stmts = {}, readonly = readonly }, DB)
  local have, what = schema.identify(db, path, migrations)
  if not have and readonly and (what:find("unable to open", 1, true) or what:find("readonly", 1, true)) then
    -- WAL mode needs the -shm file; in a read-only folder SQLite cannot create it
    db:close()
    h, err = raw_open(path, sqlite.IMMUTABLE)
    if not h then return nil, err end
    db = setmetatable({ h = h, path = path, stmts = {}, readonly = true, immutable = true }, DB)
    local wal = io.open(path .. "-wal", "rb")
    local wal_size = wal and wal:seek("end") or 0
    if wal then wal:close() end
    if wal_size > 0 then
      db.warning = string.format("%s: read without its write-ahead log (%s-wal, %d bytes: this folder is read-only),"
        .. " so the newest changes may be missing",
        path, path, wal_size)
    end
    have, what = schema.identify(db, path, migrations)
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
  local ok, merr = schema.migrate(db, path, migrations, have)
  if not ok then
    db:close()
    return nil, merr
  end
  return db
end

-- The LLM response cache in a store's file (table llm_cache, migration 4): an object
-- with kind = "sqlite", path, get(key) -> text|nil, put(key, text) -> true | nil, msg
-- and close(); or nil, msg. It opens the store like a run does (created when missing,
-- migrated, WAL), on its own connection.
function M.llm_cache(path)
  local db, err = M.open(path)
  if not db then return nil, err end
  local cache = { kind = "sqlite", path = path }
  function cache:get(key)
    if not db.h then return nil end
    local rows = db:query("SELECT response FROM llm_cache WHERE key = ?", key)
    return rows and rows[1] and rows[1].response or nil
  end
  function cache:put(key, value)
    if not db.h then return nil, "cache closed" end
    local ok, werr = db:write("INSERT OR REPLACE INTO llm_cache(key, response, created) VALUES (?, ?, ?)",
      key, value, os.time())
    if not ok then return nil, werr end
    return true
  end
  function cache:close() db:close() end
  return cache
end

return M
