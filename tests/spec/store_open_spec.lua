-- tests/spec/store_open_spec.lua: opening the store read-only never writes it; empty and
-- foreign files are refused untouched; JSON output of the read commands is valid UTF-8.
local store = require("kloop.store.db")
local util = require("kloop.util")

package.path = "tests/spec/support/?.lua;" .. package.path
local fixture = require("store_fixture")
local tmp = fixture.dir
local function fresh_path() return fixture.fresh_path("o") end
local raw_exec = fixture.raw_exec

-- What `stat` and the bytes say about a file (size, mtime in ns, content).
local function fingerprint(path)
  local p = io.popen("stat -c '%s %y' " .. util.shell_quote(path) .. " 2>&1")
  local st = p:read("*a")
  p:close()
  return st .. (util.read_file(path) or "")
end

local function a_store()
  local path = fresh_path()
  local db = assert(store.open(path))
  local run = assert(db:begin_run { strategy_path = "s.lua", strategy_text = "", task_name = "t", seed = 1 })
  assert(db:add_candidate(run, { source = "x", proposer = "user" }))
  assert(db:end_run(run, "done", "x"))
  db:close()
  return path
end

describe("kloop.store.open read-only", function()
  it("reads a store without writing it, and refuses writes", function()
    local path = a_store()
    local before = fingerprint(path)
    local db = assert(store.open(path, { readonly = true }))
    assert.are.equal(1, #db:runs())
    local ok, err = db:write("UPDATE runs SET task_name = 'changed'")
    assert.is_nil(ok)
    assert.matches("readonly", err)
    db:close()
    assert.are.equal(before, fingerprint(path))
  end)

  it("refuses an empty file and leaves it empty, with no -wal or -shm beside it", function()
    local path = fresh_path()
    assert(util.write_file(path, ""))
    local db, err = store.open(path, { readonly = true })
    assert.is_nil(db)
    assert.matches(path .. ": an empty file, not a kloop store", err, 1, true)
    assert.are.equal("", util.read_file(path))
    assert.is_false(util.file_exists(path .. "-wal"))
    assert.is_false(util.file_exists(path .. "-shm"))
  end)

  it("refuses another program's SQLite file before changing a byte, writable or not", function()
    local path = fresh_path()
    raw_exec(path, "PRAGMA journal_mode = DELETE; CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');")
    local before = fingerprint(path)
    for _, opts in ipairs({ { readonly = true }, {} }) do
      local db, err = store.open(path, opts)
      assert.is_nil(db)
      assert.matches("not a kloop database", err, 1, true)
      -- a writable open used to switch the file to WAL mode (header bytes 18-19) first
      assert.are.equal(before, fingerprint(path))
    end
    local v1 = fresh_path()
    raw_exec(v1, "PRAGMA journal_mode = DELETE; CREATE TABLE runs (x); PRAGMA user_version = 1;")
    local db, err = store.open(v1, { readonly = true })
    assert.is_nil(db)
    assert.matches("no 'candidates' table", err, 1, true)
  end)

  it("reads a store of an older schema as it is, without migrating it", function()
    local path = fresh_path()
    local db = assert(store.open(path, { migrations = { store.migrations[1] } }))
    db:close()
    local before = fingerprint(path)
    local newer = { store.migrations[1], "CREATE TABLE extra (a);" }
    db = assert(store.open(path, { readonly = true, migrations = newer }))
    assert.are.equal(1, db.version)
    assert.are.same({}, db:runs())
    assert.are.equal(1, db:query("PRAGMA user_version")[1].user_version)
    db:close()
    assert.are.equal(before, fingerprint(path))
  end)

  it("says 'no database' for a missing file and creates none", function()
    local path = tmp .. "/missing.db"
    local db, err = store.open(path, { readonly = true })
    assert.is_nil(db)
    assert.matches("no database at", err, 1, true)
    assert.is_false(util.file_exists(path))
  end)
end)
