-- kloop.core.sqlite: the wrapper of the core's SQLite layer (kl_db_*, kl_stmt_* in kloop.h):
-- the only Lua code that calls them. Connections and statements get their finalizer where
-- they are made; close() and finalize() free them at once (both may be called twice).
-- Expected failures (SQL SQLite refuses, a constraint, busy, I/O) return nil, msg; misuse
-- (a closed connection, a parameter index out of range, a value of no SQL type) raises.
local cffi = require("kloop.core.ffi")
local cjson = require("cjson")
local ffi, C = cffi.ffi, cffi.C

local M = {}

-- kl_db_open flags: 0 is read-write, the file created when missing.
M.READONLY = C.KL_DB_READONLY   -- never writes; fails if the file is missing
M.IMMUTABLE = C.KL_DB_IMMUTABLE -- read-only with immutable=1: no -wal/-shm files touched
M.NO_SETUP = C.KL_DB_NO_SETUP   -- writable, but no pragmas at open (nothing written)

-- What a kl_stmt_bind_* status means (SQLite result codes). RANGE and MISUSE are the
-- caller's mistake; the others are failures a caller may meet with good input.
local SQLITE_NOMEM, SQLITE_TOOBIG, SQLITE_MISUSE, SQLITE_RANGE = 7, 18, 21, 25
local BIND_MISUSE = { [SQLITE_RANGE] = "index out of range", [SQLITE_MISUSE] = "API misuse (statement in use)" }
local BIND_FAILURE = { [SQLITE_TOOBIG] = "string or blob too big", [SQLITE_NOMEM] = "out of memory" }

local Conn = {}
Conn.__index = Conn
local Stmt = {}
Stmt.__index = Stmt

-- Opens a database file: connection, or nil, msg.
function M.open(path, flags)
  local out = ffi.new("kl_db*[1]")
  local err = ffi.new("kl_err")
  if C.kl_db_open(path, flags or 0, out, err) ~= 0 then return nil, ffi.string(err.msg) end
  return setmetatable({ h = ffi.gc(out[0], C.kl_db_close), path = path }, Conn)
end

local function conn_handle(self)
  if not self.h then error("sqlite: the connection is closed", 3) end
  return self.h
end

-- Runs one or more statements without parameters: true, or nil, msg.
function Conn:exec(sql)
  local err = ffi.new("kl_err")
  if C.kl_db_exec(conn_handle(self), sql, err) ~= 0 then return nil, ffi.string(err.msg) end
  return true
end

-- Compiles one statement: statement, or nil, msg (the message as SQLite words it).
function Conn:prepare(sql)
  local out = ffi.new("kl_stmt*[1]")
  local err = ffi.new("kl_err")
  if C.kl_db_prepare(conn_handle(self), sql, out, err) ~= 0 then return nil, ffi.string(err.msg) end
  return setmetatable({ st = ffi.gc(out[0], C.kl_stmt_finalize), sql = sql, conn = self }, Stmt)
end

function Conn:last_insert_rowid() return tonumber(C.kl_db_last_insert_rowid(conn_handle(self))) end
function Conn:changes() return C.kl_db_changes(conn_handle(self)) end

-- Closes the connection. Statements not finalized yet keep SQLite's side open until
-- they are (sqlite3_close_v2), so finalize them first to free the file at once.
function Conn:close()
  if not self.h then return end
  C.kl_db_close(ffi.gc(self.h, nil))
  self.h = nil
end

local function stmt_handle(self)
  if not self.st then error("sqlite: the statement is finalized", 3) end
  return self.st
end

-- Binds v to parameter i (1-based). `level` is error()'s, counted from bind1's caller.
local function bind1(self, i, v, level)
  local st = stmt_handle(self)
  local t = type(v)
  local rc
  if v == nil or v == cjson.null then rc = C.kl_stmt_bind_null(st, i)
  elseif t == "number" then
    if v == math.floor(v) and math.abs(v) < 2^53 then rc = C.kl_stmt_bind_int64(st, i, v)
    else rc = C.kl_stmt_bind_double(st, i, v) end
  elseif t == "boolean" then rc = C.kl_stmt_bind_int64(st, i, v and 1 or 0)
  elseif t == "string" then rc = C.kl_stmt_bind_text(st, i, v, #v)
  elseif t == "cdata" then rc = C.kl_stmt_bind_int64(st, i, v)
  else
    C.kl_stmt_reset(st)
    error(string.format("sqlite: cannot bind a %s to parameter %d", t, i), level + 1)
  end
  if rc == 0 then return true end
  -- a failed bind leaves the statement reset with no bindings, ready for the next use
  C.kl_stmt_reset(st)
  if BIND_MISUSE[rc] then
    error(string.format("sqlite: cannot bind parameter %d: %s", i, BIND_MISUSE[rc]), level + 1)
  end
  return nil, string.format("cannot bind parameter %d: %s", i, BIND_FAILURE[rc] or ("SQLite error " .. tostring(rc)))
end

-- Binds one parameter: true, or nil, msg (a value SQLite refuses: too big, no memory);
-- raises on misuse, at `level` (error()'s, default 2: the caller of bind).
function Stmt:bind(i, v, level)
  local ok, err = bind1(self, i, v, level or 2)
  return ok, err
end

-- Binds the arguments to parameters 1..n: true, or nil, msg; raises like bind.
function Stmt:bind_values(...)
  for i = 1, select("#", ...) do
    local ok, err = bind1(self, i, (select(i, ...)), 2)
    if not ok then return nil, err end
  end
  return true
end

-- One step: true when a row is ready (read it with row()), false when done; or nil, msg.
function Stmt:step()
  local has = ffi.new("int[1]")
  local err = ffi.new("kl_err")
  if C.kl_stmt_step(stmt_handle(self), has, err) ~= 0 then return nil, ffi.string(err.msg) end
  return has[0] ~= 0
end

-- The value of column i (0-based) of the current row: number, string or nil.
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

-- The current row as a table by column name (NULL columns absent).
function Stmt:row()
  local st = stmt_handle(self)
  local row = {}
  for c = 0, C.kl_stmt_column_count(st) - 1 do row[ffi.string(C.kl_stmt_column_name(st, c))] = column(st, c) end
  return row
end

-- Rewinds the statement and clears its bindings, for the next use.
function Stmt:reset() C.kl_stmt_reset(stmt_handle(self)) end

function Stmt:finalize()
  if not self.st then return end
  C.kl_stmt_finalize(ffi.gc(self.st, nil))
  self.st = nil
end

return M
