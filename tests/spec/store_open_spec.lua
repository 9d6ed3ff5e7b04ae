-- tests/spec/store_open_spec.lua: opening the store read-only never writes it; empty and
-- foreign files are refused untouched; JSON output of the read commands is valid UTF-8.
local store = require("kloop.store.db")
local store_common = require("kloop.cli.store_common")
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

describe("kloop.cli.store_common JSON", function()
  it("turns each byte of an invalid UTF-8 sequence into U+00XX and keeps valid text", function()
    local s = store_common.utf8_safe_string
    assert.are.equal("abc", s("abc"))
    assert.are.equal("caf\195\169", s("caf\233"))                      -- Latin-1 é: one byte
    assert.are.equal("\195\191\195\190", s("\255\254"))
    assert.are.equal("\226\130\172", s("\226\130\172"))               -- the euro sign stays
    assert.are.equal("\240\159\152\128", s("\240\159\152\128"))       -- U+1F600 stays
    assert.are.equal("\195\173\194\160\194\128", s("\237\160\128"))   -- a surrogate is not UTF-8
    assert.are.equal("\195\128\194\175", s("\192\175"))               -- nor an overlong '/'
    assert.are.equal("x\195\162\194\130", s("x\226\130"))             -- a cut-off sequence
    assert.are.equal("\195\180\194\144\194\128\194\128", s("\244\144\128\128")) -- above U+10FFFF
  end)

  it("makes keys and nested strings safe and keeps array marks", function()
    local v = store_common.utf8_safe({ ["k\255"] = { "a\254" }, list = store.array({}) })
    assert.are.equal("a\195\190", v["k\195\191"][1])
    assert.are.equal("[]", store.encode(v.list))
  end)
end)
