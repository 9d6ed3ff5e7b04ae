-- tests/spec/json_spec.lua: kloop.store.json: scrubbed JSON for the store's columns and
-- deterministic JSON for command output.
local json = require("kloop.store.json")
local store = require("kloop.store.db")
local cjson = require("cjson")

describe("kloop.store.json", function()
  it("encodes with sorted keys, integers without a fraction, non-finite numbers as null", function()
    assert.are.equal('{"a":1,"b":[1,2.5,null],"c":{"x":true,"y":null}}',
      json.encode({ c = { y = cjson.null, x = true }, b = { 1, 2.5, 0 / 0 }, a = 1 }))
    assert.are.equal("1e+300", json.encode(1e300))
    assert.are.equal('"a\\"b"', json.encode('a"b'))
    assert.are.equal("null", json.encode(nil))
  end)

  it("prints a marked empty list as an array and an unmarked empty table as an object", function()
    assert.are.equal('{"l":[],"o":{}}', json.encode({ l = json.array(), o = {} }))
    assert.are.equal(json.array_mt, getmetatable(json.array({ 1 })))
  end)

  it("refuses nesting deeper than 64", function()
    local t = {}
    local cur = t
    for _ = 1, 70 do cur.x = {} cur = cur.x end
    assert.has_error(function() json.encode(t) end, "store.encode: nested too deeply")
  end)

  it("to_json scrubs before it encodes, and gives nil for nil; from_json keeps text that does not parse", function()
    assert.is_nil(json.to_json(nil))
    assert.are.same({ api_key = "[scrubbed]", n = 3 }, cjson.decode(json.to_json({ api_key = "v", n = 3 })))
    assert.are.same({ 1, 2 }, json.from_json("[1,2]"))
    assert.are.equal("not json", json.from_json("not json"))
    assert.is_nil(json.from_json(nil))
  end)

  it("is what kloop.store.db exports under its old names", function()
    assert.are.equal(json.encode, store.encode)
    assert.are.equal(json.to_json, store.to_json)
    assert.are.equal(json.array, store.array)
    assert.are.equal(json.array_mt, store.array_mt)
  end)
end)
