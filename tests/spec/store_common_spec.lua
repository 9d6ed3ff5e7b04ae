-- tests/spec/store_common_spec.lua: kloop.cli.store_common, what the store commands share:
-- ids, JSON output that is valid UTF-8, parameter and speedup text.
local common = require("kloop.cli.store_common")
local store = require("kloop.store.db")

describe("kloop.cli.store_common", function()
  it("parses ids", function()
    assert.are.same({ "run", 3 }, { common.parse_ref("3", "run") })
    assert.are.same({ "candidate", 3 }, { common.parse_ref("3", "candidate") })
    assert.are.same({ "candidate", 12 }, { common.parse_ref("c:12", "run") })
    assert.are.same({ "run", 12 }, { common.parse_ref("r:12", "candidate") })
    assert.are.same({ "run", 12 }, { common.parse_ref("Run:12", "candidate") })
    assert.is_nil((common.parse_ref("x:1", "run")))
    assert.is_nil((common.parse_ref("c:", "run")))
    assert.is_nil((common.parse_ref("1.5", "run")))
    assert.are.same({ nil, "'-1' is not an id (use N, c:N for a candidate or r:N for a run)" },
      { common.parse_ref("-1", "run") })
    assert.are.same({ nil, "missing id" }, { common.parse_ref(nil, "run") })
  end)

  it("turns each byte of an invalid UTF-8 sequence into U+00XX and keeps valid text", function()
    local s = common.utf8_safe_string
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
    local v = common.utf8_safe({ ["k\255"] = { "a\254" }, list = store.array({}) })
    assert.are.equal("a\195\190", v["k\195\191"][1])
    assert.are.equal("[]", store.encode(v.list))
    assert.are.equal('{"k\195\191":["a\195\190"]}', common.json({ ["k\255"] = { "a\254" } }))
  end)

  it("writes parameters, parents and who proposed a candidate", function()
    assert.is_nil(common.params_text({}))
    assert.is_nil(common.params_text(nil))
    assert.are.equal("BM=16,BN=64", common.params_text({ BN = 64, BM = 16 }))
    assert.are.same({ "c:1", "c:5" }, common.parent_refs({ 1, 5 }))
    assert.are.same({ "llm", "model m", "prompt p@h", "seed 3" },
      common.proposed_by({ proposer = "llm", model = "m", prompt_id = "p", prompt_hash = "h", llm_seed = 3 }))
    assert.are.same({ "tune" }, common.proposed_by({ proposer = "tune" }))
  end)

  it("gives a speedup only to a verified time", function()
    local run = { baseline_ms = 4 }
    assert.are.equal(5, common.speedup(run, { verdict = "ok", median_ms = 0.8 }))
    assert.is_nil(common.speedup(run, { verdict = "wrong", median_ms = 0.8 }))
    assert.is_nil(common.speedup(run, { verdict = "ok", median_ms = 0 }))
    assert.is_nil(common.speedup({}, { verdict = "ok", median_ms = 1 }))
    assert.is_nil(common.speedup(run, nil))
  end)

  it("marks a writer-less running run stale", function()
    assert.are.equal("stale", common.status_of({ status = "running", writer_alive = false }))
    assert.are.equal("running", common.status_of({ status = "running", writer_alive = true }))
    assert.are.equal("done", common.status_of({ status = "done", writer_alive = false }))
  end)
end)
